import { expect } from "chai";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parseFleetConfig } from "../../../lib/config/parse";
import { ENGINE_API_KEY_ENV, fleetDocument } from "../../../lib/fleet/fleet-document";
import { attestationDocument } from "../../../lib/attestation/document";
import { engineContract } from "../../../lib/attestation/contract";
import { facts } from "../attestation/fixtures";

const ROOT = path.resolve(__dirname, "..", "..", "..");
const PYTHON = path.join(ROOT, ".tools", "venv", "bin", "python");

const spec = parseFleetConfig({
  hosts: [
    { alias: "a", destination: "root@198.18.0.11", fabricInterface: "fab0" },
    { alias: "b", destination: "root@198.18.0.12", fabricInterface: "fab0" },
  ],
  engines: [
    { id: "e1", host: "a", gpuIds: [0] },
    { id: "e2", host: "b", gpuIds: [0], role: "decode", pin: true },
    { id: "e3", host: "a", gpuIds: [1] },
  ],
  model: { servedName: "tiny-llama", checkpointDir: "/models/tiny-llama" },
  slo: { ttftS: 4, tpotS: 0.2 },
});
const endpoints = spec.engines.map((e, i) => ({
  id: e.id,
  url: `http://198.18.0.1${i + 1}:${e.port}`,
  attestationUrl: `http://198.18.0.1${i + 1}:${e.attestationPort}/v1/attestation`,
}));
const doc = fleetDocument(spec, endpoints, { accelerator: "NVIDIA H100 80GB HBM3", acceleratorsPerEngine: 1, tensorParallel: 1 }, { profilesPath: "runs/profiles.json" });

describe("fleet document", () => {
  it("carries roles, pins, SLOs and the key's variable name, never the key", () => {
    expect(doc.engines).to.deep.equal([
      { iid: "e1", url: "http://198.18.0.11:8100", attestation_url: "http://198.18.0.11:8200/v1/attestation", role: "prefill" },
      { iid: "e2", url: "http://198.18.0.12:8101", attestation_url: "http://198.18.0.12:8201/v1/attestation", role: "decode", pin: true },
      { iid: "e3", url: "http://198.18.0.13:8102", attestation_url: "http://198.18.0.13:8202/v1/attestation", role: "decode" },
    ]);
    expect(doc.slo).to.deep.equal({ ttft_s: 4, tpot_s: 0.2 });
    expect((doc.engine as Record<string, unknown>).engine_api_key_env).to.equal(ENGINE_API_KEY_ENV);
  });

  it("loads in narwhal-inference's own loader", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "fleetdoc-"));
    try {
      const file = path.join(dir, "fleet.json");
      fs.writeFileSync(file, JSON.stringify(doc, null, 2));
      const script = "import sys, json; from narwhal.config.loading import load; c = load(sys.argv[1]); print(json.dumps({'model': c.model, 'iids': [e.iid for e in c.engines]}))";
      const out = execFileSync(PYTHON, ["-c", script, file], { encoding: "utf8", env: { ...process.env, [ENGINE_API_KEY_ENV]: "x" } });
      expect(JSON.parse(out)).to.deep.equal({ model: "tiny-llama", iids: ["e1", "e2", "e3"] });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("carries the attested engine_contract after Gate E, and narwhal's loader reads it back unchanged", () => {
    const fleet = engineContract(spec.engines.map((e) => ({ engineId: e.id, contract: attestationDocument(facts({ id: e.id })).contract })));
    const attested = fleetDocument(spec, endpoints, { accelerator: "NVIDIA H100 80GB HBM3", acceleratorsPerEngine: 1, tensorParallel: 1 }, { profilesPath: "runs/profiles.json", engineContract: fleet.contract });
    expect(attested.engine_contract).to.deep.equal(fleet.contract);
    expect(attested.schema_version).to.equal(2);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "fleetdoc-"));
    try {
      const file = path.join(dir, "fleet.json");
      fs.writeFileSync(file, JSON.stringify(attested, null, 2));
      const script =
        "import sys, json; from narwhal.config.loading import load; c = load(sys.argv[1]); " +
        "print(json.dumps({'contract': c.engine_contract.fields(), 'missing': c.contract_missing(), 'fingerprint': c.engine_contract.fingerprint(), " +
        "'attestation_urls': [e.attestation_url for e in c.engines]}))";
      const out = JSON.parse(execFileSync(PYTHON, ["-c", script, file], { encoding: "utf8", env: { ...process.env, [ENGINE_API_KEY_ENV]: "x" } }));
      expect(out.contract).to.deep.equal(fleet.contract);
      expect(out.missing).to.deep.equal([]);
      expect(out.fingerprint).to.equal(fleet.fingerprint);
      expect(out.attestation_urls).to.deep.equal(endpoints.map((e) => e.attestationUrl));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("fleet document: the router's restart policy", () => {
  const fleet = engineContract(spec.engines.map((e) => ({ engineId: e.id, contract: attestationDocument(facts({ id: e.id })).contract })));
  const withPolicy = (restartPolicy: "individual" | "whole_wave") =>
    fleetDocument(spec, endpoints, { accelerator: "NVIDIA H100 80GB HBM3", acceleratorsPerEngine: 1, tensorParallel: 1 }, { profilesPath: "runs/profiles.json", engineContract: fleet.contract, restartPolicy });

  it("leaves narwhal's default (individual) unwritten, and resumes from the serving router's handoff", () => {
    expect(withPolicy("individual").recovery).to.deep.equal({ resume: true });
  });

  it("writes whole_wave, which narwhal's loader accepts beside the attested contract", () => {
    const doc = withPolicy("whole_wave");
    expect(doc.recovery).to.deep.equal({ engine_restart_policy: "whole_wave", resume: true });
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "fleetdoc-"));
    try {
      const file = path.join(dir, "fleet.json");
      fs.writeFileSync(file, JSON.stringify(doc, null, 2));
      const script = "import sys; from narwhal.config.loading import load; c = load(sys.argv[1]); print(c.engine_restart_policy, c.resume)";
      expect(execFileSync(PYTHON, ["-c", script, file], { encoding: "utf8", env: { ...process.env, [ENGINE_API_KEY_ENV]: "x" } }).trim()).to.equal("whole_wave True");
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("sanitised fleet document", () => {
  it("replaces every engine address with its host alias and keeps ports, paths and everything else", () => {
    const { sanitisedFleetDocument } = require("../../../lib/fleet/sanitised-document") as typeof import("../../../lib/fleet/sanitised-document");
    const clean = sanitisedFleetDocument(doc, { e1: "a", e2: "b", e3: "a" });
    expect(clean.engines).to.deep.equal([
      { iid: "e1", url: "http://a:8100", attestation_url: "http://a:8200/v1/attestation", role: "prefill" },
      { iid: "e2", url: "http://b:8101", attestation_url: "http://b:8201/v1/attestation", role: "decode", pin: true },
      { iid: "e3", url: "http://a:8102", attestation_url: "http://a:8202/v1/attestation", role: "decode" },
    ]);
    expect(JSON.stringify(clean)).to.not.match(/198\.18\./);
    expect(clean.slo).to.deep.equal(doc.slo);
  });
});

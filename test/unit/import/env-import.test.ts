/**
 * The runbook's `.env` (and fleet.json) as stack config: every field lands where the program reads it,
 * secrets leave the plain config, what cannot be carried over is reported with why, and a bad value is
 * reported against the key the operator wrote.
 */
import { expect } from "chai";
import { parseFleetConfig } from "../../../lib/config/parse";
import { parseEnvFile } from "../../../lib/import/dotenv";
import { importRunbook, type ImportResult } from "../../../lib/import/runbook";
import { IMAGE, KNOWN_HOSTS, NODE1_KEY, RUNBOOK_ENV, SECRETS, runbookFleet } from "./fixtures";

const problemsOf = (r: ImportResult) => r.problems.map((p) => `${p.from}: ${p.message}`);
const unmappedOf = (r: ImportResult) => Object.fromEntries(r.unmapped.map((u) => [u.from, u.reason]));
const withLine = (env: string, key: string, line: string | undefined) =>
  env
    .split("\n")
    .map((l) => (l.startsWith(`${key}=`) || l.startsWith(`export ${key}=`) ? line : l))
    .filter((l): l is string => l !== undefined)
    .join("\n");

describe("import: runbook .env", () => {
  it("maps every runbook field, with per-node overrides, to config the schema accepts", () => {
    const r = importRunbook({ env: RUNBOOK_ENV, knownHosts: KNOWN_HOSTS });
    expect(problemsOf(r)).to.deep.equal([]);
    expect(r.config).to.deep.equal({
      hosts: [
        { alias: "node-1", destination: "ubuntu@10.20.0.11", hostKey: NODE1_KEY, auth: "password", fabricAddress: "192.168.50.11" },
        { alias: "gpu-b", destination: "gpu-b", urlHost: "10.30.0.12" },
        { alias: "router", destination: "ops@10.20.0.4", auth: "password" },
      ],
      router: { host: "router" },
      engines: [
        { id: "engine-1", host: "node-1", gpuIds: [0, 1], port: 8100, attestationPort: 8010, nixlPort: 5600 },
        { id: "engine-2", host: "gpu-b", gpuIds: [0, 1], port: 8100, attestationPort: 8010, nixlPort: 5600 },
        { id: "engine-3", host: "gpu-b", gpuIds: [2, 3], port: 8101, attestationPort: 8011, nixlPort: 5601, overrides: { dtype: "float16", slo: { ttftS: 6 } } },
      ],
      model: { servedName: "qwen3-8b", checkpointDir: "/srv/models/qwen3-8b" },
      runtime: { kind: "docker-cli", image: IMAGE },
      fabric: { interface: "ens5f0" },
      launch: { ucxTcpPortRange: "6300-6500", tensorParallelSize: 2, dtype: "bfloat16", blockSize: 64, engineEnv: { VLLM_LOGGING_LEVEL: "INFO" } },
      slo: { ttftS: 8, tpotS: 0.1 },
    });
    const spec = parseFleetConfig(r.config);
    expect(spec.engines.map((e) => [e.id, e.role])).to.deep.equal([["engine-1", "prefill"], ["engine-2", "decode"], ["engine-3", "decode"]]);
  });

  it("turns passwords and the engine API key into secrets, kept out of the plain config and the report", () => {
    const r = importRunbook({ env: RUNBOOK_ENV, knownHosts: KNOWN_HOSTS });
    expect(r.secrets.map((s) => [s.key, s.path, s.value, s.from])).to.deep.equal([
      ["sshPasswords.node-1", true, SECRETS.node1, "NARWHAL_NODE_1_SSH_PASSWORD"],
      ["sshPasswords.router", true, SECRETS.router, "NARWHAL_ROUTER_SSH_PASSWORD"],
      ["engineApiKey", false, SECRETS.apiKey, "NARWHAL_ENGINE_API_KEY"],
    ]);
    const visible = JSON.stringify([r.config, r.used, r.unmapped, r.problems]);
    for (const s of [...Object.values(SECRETS), "hf_not_for_this_program"]) expect(visible).not.to.include(s);
  });

  it("reports every field it does not carry over, and why", () => {
    const u = unmappedOf(importRunbook({ env: RUNBOOK_ENV, knownHosts: KNOWN_HOSTS }));
    expect(Object.keys(u).sort()).to.deep.equal(["HF_TOKEN (line 43)", "MODEL_REPO_ID", "MODEL_REVISION", "NARWHAL_DEPLOYMENT_REVISION", "NARWHAL_RUN_DIR"]);
    expect(u.NARWHAL_RUN_DIR).to.match(/\/var\/lib\/narwhal-fleet/);
    expect(u.MODEL_REVISION).to.match(/file hashes/);
    expect(u["HF_TOKEN (line 43)"]).to.match(/not a runbook field/);
  });

  it("reports unknown fields, 0.1.2 fields and a known_hosts file it could not read", () => {
    const env = `${RUNBOOK_ENV}NARWHAL_NODE_1_COLOUR=blue\nNARWHAL_SOMETHING_NEW=1\nNODE_1_IP=10.0.0.9\n`;
    const u = unmappedOf(importRunbook({ env }));
    expect(u.NARWHAL_NODE_1_COLOUR).to.match(/not a per-node field/);
    expect(u.NARWHAL_SOMETHING_NEW).to.match(/not a runbook field this importer knows/);
    expect(u.NODE_1_IP).to.match(/0\.1\.2/);
    expect(u.NARWHAL_SSH_KNOWN_HOSTS).to.match(/could not be read.*first contact/);
  });

  it("names the .env key of each malformed value, and writes nothing plain from them", () => {
    let env = withLine(RUNBOOK_ENV, "NARWHAL_NODE_2_GPU_IDS", "NARWHAL_NODE_2_GPU_IDS=GPU-5d3c0c8e-1111-2222-3333-444455556666");
    env = withLine(env, "NARWHAL_ENGINE_PORT", "NARWHAL_ENGINE_PORT=81o0");
    env = withLine(env, "NARWHAL_ENGINE_ENV", "NARWHAL_ENGINE_ENV='[not json]'");
    env = withLine(env, "NARWHAL_NODE_2_URL", "NARWHAL_NODE_2_URL=https://10.30.0.12:8100");
    env = withLine(env, "NARWHAL_MODEL_DTYPE", "NARWHAL_MODEL_DTYPE=int4");
    env += "NARWHAL_NODE_4_GPU_IDS=4\nNARWHAL_RUN_DIR=/srv/my runs\n";
    const p = problemsOf(importRunbook({ env }));
    expect(p).to.have.length(7);
    expect(p).to.include.members([
      "NARWHAL_NODE_2_GPU_IDS: lists NVIDIA GPU UUIDs; this program allocates GPUs by index: write the indices nvidia-smi shows for them",
      "NARWHAL_ENGINE_PORT: expected a port (a whole number)",
      'NARWHAL_ENGINE_ENV: expected a JSON object of string values, e.g. {"VLLM_LOGGING_LEVEL":"DEBUG"}',
      "NARWHAL_NODE_2_URL: expected an http:// URL, found https://",
      "NARWHAL_NODE_4_SSH: missing, but NARWHAL_NODE_4_GPU_IDS is set: every engine needs its SSH destination",
    ]);
    expect(p.find((x) => x.startsWith("NARWHAL_MODEL_DTYPE:"))).to.match(/expected one of/);
    expect(p.find((x) => x.startsWith(`.env line ${env.split("\n").length - 1}:`))).to.match(/NARWHAL_RUN_DIR: an unquoted space/);
  });

  it("reports schema problems against the .env key behind them", () => {
    // Engine 3 shares gpu-b with engine 2: without its own ports it collides on NARWHAL_ENGINE_PORT.
    let env = withLine(RUNBOOK_ENV, "NARWHAL_NODE_3_ENGINE_PORT", undefined);
    env = withLine(env, "NARWHAL_UCX_TCP_PORT_RANGE", "NARWHAL_UCX_TCP_PORT_RANGE=6500-6300");
    env = withLine(env, "NARWHAL_BLOCK_SIZE", "NARWHAL_BLOCK_SIZE=48");
    const p = problemsOf(importRunbook({ env }));
    expect(p.find((x) => x.startsWith("NARWHAL_ENGINE_PORT (engines[2].port):"))).to.match(/8100/);
    expect(p.find((x) => x.startsWith("NARWHAL_UCX_TCP_PORT_RANGE (launch.ucxTcpPortRange):"))).to.be.a("string");
    expect(p.find((x) => x.startsWith("NARWHAL_BLOCK_SIZE (launch.blockSize):"))).to.match(/48/);
  });

  it("refuses two passwords for one destination (one host, one credential)", () => {
    const env = withLine(RUNBOOK_ENV, "NARWHAL_NODE_3_SSH", "NARWHAL_NODE_3_SSH=gpu-b\nNARWHAL_NODE_2_SSH_PASSWORD=one\nNARWHAL_NODE_3_SSH_PASSWORD=two");
    expect(problemsOf(importRunbook({ env }))).to.deep.equal([
      "NARWHAL_NODE_3_SSH_PASSWORD: differs from NARWHAL_NODE_2_SSH_PASSWORD, but both log in to host gpu-b (the same destination): one host has one credential",
    ]);
  });

  it("logs direct destinations in with the agent unless a stack key is given", () => {
    const env = withLine(RUNBOOK_ENV, "NARWHAL_NODE_1_SSH_PASSWORD", undefined);
    expect((importRunbook({ env }).config.hosts as any[])[0].auth).to.equal("agent");
    const keyed = importRunbook({ env, sshPrivateKey: { text: "-----BEGIN OPENSSH PRIVATE KEY-----\nx\n", from: "--ssh-key" } });
    expect((keyed.config.hosts as any[])[0].auth).to.equal(undefined);
    expect(keyed.secrets.map((s) => s.key)).to.include("sshPrivateKey");
  });
});

describe("import: runbook fleet.json", () => {
  const withFleet = (doc: unknown, resolveProfiles?: (p: string) => string | undefined, resolveCalibration?: (p: string) => string | undefined) =>
    importRunbook({ env: RUNBOOK_ENV, knownHosts: KNOWN_HOSTS, fleet: { document: doc, label: "fleet.json", resolveProfiles, resolveCalibration } });

  it("takes engine ids, roles, pins, limits, deadlines and the profile store from it", () => {
    const r = withFleet(runbookFleet(), (p) => (p === "runs/profiles.json" ? "/srv/runbook/runs/profiles.json" : undefined));
    expect(problemsOf(r)).to.deep.equal([]);
    const c = r.config as any;
    expect(c.engines.map((e: any) => [e.id, e.host, e.role, e.pin])).to.deep.equal([
      ["p0", "node-1", "prefill", true],
      ["d0", "gpu-b", "decode", undefined],
      ["d1", "gpu-b", "decode", undefined],
    ]);
    expect(c.slo).to.deep.equal({ ttftS: 4.5, tpotS: 0.08, requestTimeoutS: 300, prefillTimeoutS: 60, firstTokenTimeoutS: 3.5, healthTimeoutS: 4 });
    expect(c.profiling).to.deep.equal({ adoptStore: "/srv/runbook/runs/profiles.json" });
    const u = unmappedOf(r);
    expect(u["fleet.json hardware"]).to.match(/discovery/);
    expect(u["fleet.json serving.max_connections"]).to.match(/default/);
    expect(u["fleet.json engine.first_token_calibration_path"]).to.equal("no calibration found at runs/calibration/first-token.json next to fleet.json; copy it here (or pass --calibration) to adopt it, else enable calibration to measure the deadline afresh");
    expect(c.calibration).to.equal(undefined);
    expect(u.NARWHAL_TTFT_S).to.match(/superseded by fleet.json slo.ttft_s/);
    expect(u["fleet.json _note"]).to.equal(undefined);
    parseFleetConfig(r.config);
  });

  it("adopts the first-token calibration it finds, enabling calibration so a refused file is measured afresh", () => {
    const r = withFleet(runbookFleet(), undefined, (p) => (p === "runs/calibration/first-token.json" ? "/srv/runbook/runs/calibration/first-token.json" : undefined));
    expect(problemsOf(r)).to.deep.equal([]);
    expect((r.config as any).calibration).to.deep.equal({ enabled: true, adopt: { path: "/srv/runbook/runs/calibration/first-token.json" } });
    expect(unmappedOf(r)["fleet.json engine.first_token_calibration_path"]).to.equal(undefined);
    expect(r.used.filter((u) => u.from === "fleet.json engine.first_token_calibration_path").map((u) => u.to)).to.deep.equal(["calibration.enabled", "calibration.adopt.path"]);
    const spec = parseFleetConfig(r.config);
    expect(spec.calibration.adopt).to.deep.equal({ path: "/srv/runbook/runs/calibration/first-token.json" });
    expect(spec.calibration.samplesPerGroup).to.equal(100);
  });

  it("matches engines by their ${NARWHAL_NODE_<n>_URL} reference, not their order", () => {
    const doc = runbookFleet();
    doc.engines.reverse();
    const c = withFleet(doc).config as any;
    expect(c.engines.map((e: any) => e.id)).to.deep.equal(["p0", "d0", "d1"]);
  });

  it("reports a store it cannot find, a model that differs, and an engine without a node", () => {
    const doc = runbookFleet();
    doc.model = "llama-3-8b";
    doc.engines.push({ iid: "d2", url: "${NARWHAL_NODE_9_URL}", role: "decode" });
    const r = withFleet(doc, () => undefined);
    expect(problemsOf(r)).to.deep.equal([
      "fleet.json model: differs from NARWHAL_ENGINE_MODEL_NAME; the fleet serves one model name",
      'fleet.json engines[3]: engine d2 has no NARWHAL_NODE_<n>_SSH in the .env to run on (matched by its url "${NARWHAL_NODE_<n>_URL}", an equal NARWHAL_NODE_<n>_URL, or its position)',
    ]);
    expect(unmappedOf(r)["fleet.json profiles.path"]).to.match(/profiled afresh/);
  });

  it("refuses the flat 0.1.2 fleet.json", () => {
    expect(problemsOf(withFleet({ model: "m", engines: [] }))[0]).to.match(/^fleet.json schema: expected "narwhal.fleet"/);
  });
});

describe("import: .env reading", () => {
  it("reads quotes, export and comments as the shell does, and refuses expansions", () => {
    const f = parseEnvFile(`export A='x y # z'\nB="q\\"r" # note\nC=plain # c\nD=$HOME/x\nE="a$(id)"\nnot an assignment\n`);
    expect(f.entries.map((e) => [e.key, e.value])).to.deep.equal([
      ["A", "x y # z"],
      ["B", 'q"r'],
      ["C", "plain"],
    ]);
    expect(f.problems.map((p) => p.line)).to.deep.equal([4, 5, 6]);
    expect(f.problems[0].message).to.match(/^D: a shell expansion/);
  });
});

describe("import: a .env that leaves required fields out", () => {
  it("names the runbook field that would set each missing value", () => {
    const r = importRunbook({ env: "NARWHAL_NODE_1_SSH=root@10.0.0.1\nNARWHAL_NODE_2_SSH=root@10.0.0.2\nNARWHAL_MODEL_DIR=/srv/models/m\n" });
    expect(r.problems.map((p) => p.from)).to.deep.equal(["NARWHAL_FABRIC_INTERFACE (hosts[0].fabricInterface)", "NARWHAL_FABRIC_INTERFACE (hosts[1].fabricInterface)", "NARWHAL_ENGINE_MODEL_NAME (model.servedName)"]);
  });
});

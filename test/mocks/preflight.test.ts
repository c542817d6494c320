/**
 * The preflight's wiring under mocks: one Preflight after the profile store, against the fleet document
 * the router loads and every engine's generation, attestation and profile, run from the router host,
 * the API key a secret; the stack's preflight output per gate. With calibration enabled, one
 * Calibration after the preflight with every engine's generation, transport and served context. No
 * provider method runs here; test/providers/{preflight-agreement,calibration}.test.ts run them.
 */
import { expect } from "chai";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { PROFILED, fleetConfig, mockSecrets, reveal, settle, useFleetMocks } from "./support/fleet";

const API_KEY = "mock-api-key-attest-0123";

describe("mocks: preflight", () => {
  const mocks = useFleetMocks();
  const registered = mocks.registered;
  const build = (extra: Record<string, unknown> = {}) => mocks.build(fleetConfig({ ...PROFILED, ...extra }), mockSecrets(API_KEY));

  it("checks the router's fleet document, every engine's generation, attestation and profile, the store, from the router host", async () => {
    const fleet = build();
    const gates = await settle(fleet.preflight.gates);
    expect(gates[0]).to.deep.include({ gate: "reach", verdict: "pass" });
    const preflights = registered.filter((r) => r.type === "pulumi-nodejs:dynamic/narwhal:Preflight");
    expect(preflights.map((r) => r.name)).to.deep.equal(["fleet-preflight"]);
    const i = preflights[0].inputs as Record<string, any>;
    expect(i.engines).to.deep.equal(
      ["e1", "e2", "e3"].map((id) => ({
        engineId: id,
        generationDigest: "sha256:" + Buffer.from(id.padEnd(32, ".")).toString("hex"),
        attestationDigest: "sha256:" + "a7".repeat(32),
        launchDigest: "sha256:" + "1a".repeat(32),
        profileDigest: "sha256:" + Buffer.from(id.padEnd(32, "p")).toString("hex"),
      })),
    );
    expect((i.profiles as Array<{ iid: string }>).map((r) => r.iid)).to.deep.equal(["e1", "e2", "e3"]);
    expect(i.profileStoreDigest).to.equal("sha256:" + "57".repeat(32));
    expect(i).to.deep.include({ pairs: "mesh", repeats: 1, schedule: "concurrent", stack: "mock" });
    const doc = i.fleetDocument as Record<string, any>;
    expect(doc.schema).to.equal("narwhal.fleet");
    expect(doc.engines.map((e: { iid: string }) => e.iid)).to.deep.equal(["e1", "e2", "e3"]);
    expect(doc.slo).to.have.keys(["ttft_s", "tpot_s"]);
    expect(reveal(i.via)).to.deep.include({ alias: "b", host: "198.18.0.12", port: 2222, user: "ops" });
    expect(i.apiKey).to.deep.include({ "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", value: API_KEY });
    expect(JSON.stringify({ ...i, apiKey: undefined })).to.not.include(API_KEY);
  });

  it("adds no calibration unless enabled", () => {
    const fleet = build();
    expect(fleet.calibration).to.equal(undefined);
    expect(registered.filter((r) => r.type === "pulumi-nodejs:dynamic/narwhal:Calibration")).to.deep.equal([]);
  });

  it("calibrates after the preflight, from the router host, against every engine's generation, transport and served context", async () => {
    const fleet = build({ calibration: { enabled: true }, launch: { maxModelLen: 8192 }, slo: { firstTokenTimeoutS: 3 } });
    expect(await settle(fleet.calibration!.deadlineS)).to.equal(3.1);
    const calibrations = registered.filter((r) => r.type === "pulumi-nodejs:dynamic/narwhal:Calibration");
    expect(calibrations.map((r) => r.name)).to.deep.equal(["fleet-calibration"]);
    const i = calibrations[0].inputs as Record<string, any>;
    expect(i.engines).to.deep.equal(
      ["e1", "e2", "e3"].map((id, k) => ({
        engineId: id,
        role: k === 0 ? "prefill" : "decode",
        pin: false,
        generationDigest: "sha256:" + Buffer.from(id.padEnd(32, ".")).toString("hex"),
        attestationDigest: "sha256:" + "a7".repeat(32),
        launchDigest: "sha256:" + "1a".repeat(32),
        transport: "tcp",
        maxModelLen: 8192,
      })),
    );
    // Spanning the served context up to the longest admitted input; the bound four deadlines out.
    expect(i).to.deep.include({ model: "tiny", runtime: { kind: "native" }, inputLengths: [128, 2048, 4096, 8191], samplesPerGroup: 100, observationBoundS: 12, maxFailuresPerGroup: 20, routerOverheadS: 0.05, schedule: "concurrent", stack: "mock" });
    expect((i.fleetDocument as Record<string, any>).engine.first_token_timeout_s).to.equal(3);
    expect(reveal(i.via)).to.deep.include({ alias: "b", host: "198.18.0.12", port: 2222, user: "ops" });
    expect(JSON.stringify({ ...i, apiKey: undefined })).to.not.include(API_KEY);
    expect(i.adopt).to.equal(undefined);
  });

  it("hands the provider the calibration file to adopt with the digest of the bytes read and the pin; a missing file is a config error", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "calibration-adopt-"));
    try {
      const file = path.join(dir, "first-token.json");
      fs.writeFileSync(file, '{"schema": "narwhal.first-token-calibration"}\n');
      const hex = createHash("sha256").update(fs.readFileSync(file)).digest("hex");
      const fleet = build({ calibration: { enabled: true, adopt: { path: file, sha256: "ab".repeat(32) } }, launch: { maxModelLen: 8192 } });
      await settle(fleet.calibration!.deadlineS);
      const i = registered.filter((r) => r.type === "pulumi-nodejs:dynamic/narwhal:Calibration")[0].inputs as Record<string, any>;
      expect(i.adopt).to.deep.equal({ path: file, sha256: `sha256:${hex}`, pinned: "sha256:" + "ab".repeat(32) });
      expect(() => build({ calibration: { enabled: true, adopt: { path: path.join(dir, "absent.json") } } })).to.throw(/calibration\.adopt\.path: cannot read the calibration .*absent\.json \(ENOENT\)/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

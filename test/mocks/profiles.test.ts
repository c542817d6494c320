/**
 * The profile mesh's wiring under mocks: one Profile per engine after its attestation, bound to that
 * engine's generation, attestation, plan limit and the fleet's sweep, measured through the router host,
 * and one store on the router host at profiles.path. No provider method runs here;
 * test/providers/profile.test.ts measures real simulated engines.
 */
import { expect } from "chai";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { PROFILED, fleetConfig, mockSecrets, reveal, settle, useFleetMocks } from "./support/fleet";

const API_KEY = "mock-api-key-attest-0123";

describe("mocks: profile mesh", () => {
  const mocks = useFleetMocks();
  const registered = mocks.registered;
  const build = () => mocks.build(fleetConfig(PROFILED), mockSecrets(API_KEY));

  it("makes one Profile per engine, bound to its generation, attestation, plan limit and the fleet's sweep, measured through the router host", async () => {
    const fleet = build();
    const summary = await settle(fleet.profiles.summary);
    const profiles = registered.filter((r) => r.type === "pulumi-nodejs:dynamic/narwhal:Profile");
    expect(profiles.map((r) => r.name).sort()).to.deep.equal(["fleet-profiles-e1", "fleet-profiles-e2", "fleet-profiles-e3"]);
    const e2 = profiles.find((r) => r.name === "fleet-profiles-e2")!.inputs;
    const generation = registered.find((r) => r.name === "fleet-e2-generation")!;
    expect(e2).to.deep.include({
      engineId: "e2",
      url: "http://198.18.0.12:8101",
      servedName: "tiny",
      generationDigest: "sha256:" + Buffer.from("e2".padEnd(32, ".")).toString("hex"),
      processStartTime: 1754000000.25,
      attestationDigest: "sha256:" + "a7".repeat(32),
      launchDigest: "sha256:" + "1a".repeat(32),
      maxNumSeqs: 8,
      stack: "mock",
    });
    expect(e2.planSha256).to.equal(generation.inputs.planSha256);
    expect(e2.sweep).to.deep.equal({ prefillLens: [256, 1024, 4096], decodeInputLens: [512, 4096], decodeConcurrency: [1, 4, 16], decodeTokens: 64, prefillRepeats: 3, decodeRepeats: 1 });
    // Measured from the router host (b), pinned to its verified key.
    expect(reveal(e2.via)).to.deep.include({ alias: "b", host: "198.18.0.12", port: 2222, user: "ops", hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMockKey" });
    // An SLO is not what a profile is measured against.
    expect(Object.keys(e2)).to.not.include.members(["slo", "ttftS", "tpotS"]);
    const store = registered.find((r) => r.type === "pulumi-nodejs:dynamic/narwhal:ProfileStore")!.inputs;
    expect(store.path).to.equal("/var/lib/narwhal-fleet/mock/router/runs/profiles.json");
    expect(store.engineIds).to.deep.equal(["e1", "e2", "e3"]);
    expect((store.profiles as Array<{ engineId: string }>).map((p) => p.engineId)).to.deep.equal(["e1", "e2", "e3"]);
    expect(summary.store).to.deep.equal({ path: "/var/lib/narwhal-fleet/mock/router/runs/profiles.json", digest: "sha256:" + "57".repeat(32), samplesPath: "/var/lib/narwhal-fleet/mock/router/runs/profiles.samples.json", samplesDigest: "sha256:" + "5d".repeat(32) });
    expect(Object.keys(summary.engines)).to.deep.equal(["e1", "e2", "e3"]);
    expect(summary.engines.e1).to.deep.include({ bindingDigest: "sha256:" + "1a".repeat(32), fitErrors: { prefillMape: 0.01, prefillWorstPoint: 0.02, decodeFitMape: 0.01, decodeCvMape: 0.02 } });
    // The API key travels as a secret only.
    expect(e2.apiKey).to.deep.include({ "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", value: API_KEY });
    for (const r of [...profiles, registered.find((r) => r.type === "pulumi-nodejs:dynamic/narwhal:ProfileStore")!]) {
      const plain = JSON.stringify({ ...r.inputs, apiKey: undefined });
      expect(plain, r.name).to.not.include(API_KEY);
    }
  });

  it("hands each Profile the adopted store and sidecar with the digests of the bytes read; an unreadable store or sidecar is a config error", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "profile-adopt-"));
    try {
      const store = path.join(dir, "profiles.json");
      const sidecar = path.join(dir, "profiles.samples.json");
      fs.writeFileSync(store, '{"engines": {}}\n');
      const sha = (file: string) => "sha256:" + createHash("sha256").update(fs.readFileSync(file)).digest("hex");
      const adopting = (storePath: string) => fleetConfig({ ...PROFILED, profiling: { ...PROFILED.profiling, adoptStore: storePath } });
      // The sidecar is read too: without it the store is not adopted.
      expect(() => mocks.build(adopting(store), mockSecrets(API_KEY))).to.throw(/^config narwhal-fleet:profiling\.adoptStore: cannot read the sample sidecar .*profiles\.samples\.json \(ENOENT\); copy the runbook's store/);
      fs.writeFileSync(sidecar, '{"samples": []}\n');
      registered.splice(0);
      const fleet = mocks.build(adopting(store), mockSecrets(API_KEY));
      await settle(fleet.profiles.summary);
      const profiles = registered.filter((r) => r.type === "pulumi-nodejs:dynamic/narwhal:Profile");
      expect(profiles).to.have.lengthOf(3);
      for (const r of profiles) expect(r.inputs.adopt, r.name).to.deep.equal({ storePath: store, storeSha256: sha(store), samplesPath: sidecar, samplesSha256: sha(sidecar) });
      expect(() => mocks.build(adopting(path.join(dir, "absent.json")), mockSecrets(API_KEY))).to.throw(/^config narwhal-fleet:profiling\.adoptStore: cannot read the profile store .*absent\.json \(ENOENT\)/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("takes turns by the GPUs each plan resolved: side by side on disjoint GPUs, one after another with profiling.oneAtATime", async () => {
    const waits = async (config: Record<string, unknown>) => {
      registered.splice(0);
      await settle(mocks.build(config, mockSecrets(API_KEY)).profiles.summary);
      const profiles = registered.filter((r) => r.type === "pulumi-nodejs:dynamic/narwhal:Profile");
      return Object.fromEntries(profiles.map((r) => [r.name, profiles.filter((o) => (r.dependencies ?? []).some((u) => u.endsWith(`::${o.name}`))).map((o) => o.name)]));
    };
    // e1 and e3 share host a on GPUs 0 and 1; e2 is alone on b.
    expect(await waits(fleetConfig(PROFILED))).to.deep.equal({ "fleet-profiles-e1": [], "fleet-profiles-e2": [], "fleet-profiles-e3": [] });
    expect(await waits(fleetConfig({ ...PROFILED, profiling: { ...PROFILED.profiling, oneAtATime: true } }))).to.deep.equal({
      "fleet-profiles-e1": [],
      "fleet-profiles-e2": ["fleet-profiles-e1"],
      "fleet-profiles-e3": ["fleet-profiles-e2"],
    });
  });
});

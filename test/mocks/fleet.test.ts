import { expect } from "chai";
import * as pulumi from "@pulumi/pulumi";
import { fleetConfig, hostFacts, mockSecrets, reveal, useFleetMocks } from "./support/fleet";
import { RUNTIME_CHECK_SHA256 } from "../../lib/image-check/commands";

const API_KEY = "mock-api-key-0123456789";
const SSH_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nmock\n-----END OPENSSH PRIVATE KEY-----\n";

function promiseOf<T>(o: pulumi.Output<T>): Promise<T> {
  return new Promise((resolve) => o.apply(resolve));
}

/** The NIXL version every image check reads, when a test sets one (none: the check found no nixl distribution). */
let checkedNixl: string | null = null;

/** Give discovery the facts a real one would record, so the plans downstream resolve. */
function state(type: string, _name: string, inputs: Record<string, any>): Record<string, unknown> {
  switch (type) {
    case "pulumi-nodejs:dynamic/narwhal:HostDiscovery":
      return {
        ...inputs,
        ...hostFacts(inputs.alias),
        model: { dtype: "bfloat16", maxPositionEmbeddings: 32768, trustRemoteCode: false, ssmConvStateLayoutDS: false },
        runtime: { kind: "native", vllmVersion: "0.29.0" },
      };
    case "command:remote:Command":
      return { ...inputs, stdout: '{"pid":42,"startedAt":"2026-01-01T00:00:00Z"}' };
    case "pulumi-nodejs:dynamic/narwhal:ImageCheck":
      return { ...inputs, vllmApiVersion: "0.29.0+checked", ...(checkedNixl ? { findings: { nixl: { version: checkedNixl } } } : {}) };
    case "pulumi-nodejs:dynamic/narwhal:Liveness":
      return { ...inputs, epoch: `epoch-${inputs.name}` };
    default:
      return inputs;
  }
}

describe("mocks: Fleet component", () => {
  const mocks = useFleetMocks(state);
  const registered = mocks.registered;
  const build = () => mocks.build(fleetConfig(), mockSecrets(API_KEY, SSH_KEY));

  it("registers one discovery per host and one engine process per engine", async () => {
    const fleet = build();
    await promiseOf(fleet.engines);
    const count = (t: string) => registered.filter((r) => r.type === t).map((r) => r.name).sort();
    expect(count("narwhal:fleet:Fleet")).to.deep.equal(["fleet"]);
    expect(count("pulumi-nodejs:dynamic/narwhal:HostDiscovery")).to.deep.equal(["fleet-a", "fleet-b"]);
    expect(count("narwhal:engine:Engine")).to.deep.equal(["fleet-e1", "fleet-e2", "fleet-e3"]);
    expect(count("command:remote:Command").filter((n) => /^fleet-e\d/.test(n))).to.deep.equal(["fleet-e1-process", "fleet-e2-process", "fleet-e3-process"]);
    expect(count("pulumi-nodejs:dynamic/narwhal:ReplicaAgreement")).to.deep.equal(["fleet-replicas"]);
  });

  it("measures each host's discovery against its own engines' ports and launch policy", async () => {
    const fleet = build();
    await promiseOf(fleet.engines);
    const a = registered.find((r) => r.name === "fleet-a")!.inputs;
    const b = registered.find((r) => r.name === "fleet-b")!.inputs;
    expect(a).to.include({ modelDir: "/models/tiny", stack: "mock" });
    expect(a.runtimeRef).to.deep.equal({ kind: "native", vllmCommand: "vllm" });
    expect((a.plannedPorts as Array<{ engineId: string; port: number }>).map((p) => `${p.engineId}:${p.port}`)).to.deep.equal([
      "e1:8100", "e1:8200", "e1:5600", "e3:8102", "e3:8202", "e3:5602",
    ]);
    expect((b.plannedPorts as Array<{ engineId: string }>).every((p) => p.engineId === "e2")).to.equal(true);
    expect(a.policyDigest).to.match(/^sha256:/).and.not.equal(b.policyDigest);
  });

  it("logs in with the destination's user and port and pins the key discovery verified", async () => {
    const fleet = build();
    await promiseOf(fleet.engines);
    const discovery = registered.find((r) => r.name === "fleet-b")!;
    expect(discovery.inputs).to.include({ host: "198.18.0.12", user: "ops", port: 2222, fabricInterface: "fab0" });
    const process = registered.find((r) => r.name === "fleet-e2-process")!;
    expect(reveal(process.inputs.connection)).to.include({ host: "198.18.0.12", user: "ops", port: 2222, hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMockKey" });
  });

  it("reports each engine's GPU ids in the engines output: the ones it names, or every GPU its host shows", async () => {
    const named = await promiseOf(build().engines);
    expect(Object.fromEntries(Object.entries(named).map(([id, e]) => [id, e.gpuIds]))).to.deep.equal({ e1: [0], e2: [0], e3: [1] });
    const unnamed = await promiseOf(mocks.build(fleetConfig({ engines: [{ id: "e1", host: "a" }, { id: "e2", host: "b", gpuIds: [1] }] }), mockSecrets(API_KEY, SSH_KEY)).engines);
    expect(Object.fromEntries(Object.entries(unnamed).map(([id, e]) => [id, e.gpuIds]))).to.deep.equal({ e1: [0, 1], e2: [1] });
  });

  it("checks each engine's runtime against its own plan, pinned to discovery's version, before the proof", async () => {
    const fleet = build();
    const engines = await promiseOf(fleet.engines);
    const checks = registered.filter((r) => r.type === "pulumi-nodejs:dynamic/narwhal:ImageCheck");
    expect(checks.map((r) => r.name).sort()).to.deep.equal(["fleet-e1-image-check", "fleet-e2-image-check", "fleet-e3-image-check"]);
    const e2 = checks.find((r) => r.name === "fleet-e2-image-check")!.inputs;
    expect(e2).to.deep.include({
      engineId: "e2",
      hostAlias: "b",
      planSha256: engines.e2.planSha256,
      runtime: { kind: "native", vllmCommand: "vllm" },
      modelDir: "/models/tiny",
      pins: { vllm: "0.29.0" },
      dsRequired: false,
      checkScriptSha256: RUNTIME_CHECK_SHA256,
      deadlines: { inspectS: 30, checkS: 300 },
      login: { host: "198.18.0.12", port: 2222, user: "ops", hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMockKey", connectTimeoutS: 10 },
    });
    expect((e2.plan as { planSha256: string }).planSha256).to.equal(engines.e2.planSha256);
    // The check records the command only: where the engine runs is not part of launch.json.
    expect(Object.keys(e2.plan as object).sort()).to.deep.equal(["argv", "engineId", "env", "maxModelLen", "planSha256", "tensorParallelSize", "url"]);
    // The SSH key reaches the check only as a secret, and never its serialised provider.
    expect(reveal(e2.privateKey)).to.equal(SSH_KEY).and.not.equal(e2.privateKey);
    expect(e2.__implementation).to.equal("dynamic-providers/image-check/provider.ts");
    expect(String(e2.__provider)).to.not.include(SSH_KEY.split("\n")[1]);
    // The live proof expects the version the check found, not the one discovery read.
    expect(registered.find((r) => r.name === "fleet-e2-generation")!.inputs.expectedVersion).to.equal("0.29.0+checked");
  });

  it("replaces a native engine's process exactly when its launch plan, its host's vLLM version or its liveness epoch changes", async () => {
    const fleet = build();
    const engines = await promiseOf(fleet.engines);
    const process = registered.find((r) => r.name === "fleet-e3-process")!;
    // A process serves the vLLM it loaded: an in-place upgrade on the host is a restart.
    // A refresh that found the engine down mints a new liveness epoch: the restart.
    expect(process.inputs.triggers).to.deep.equal([engines.e3.planSha256, "0.29.0", "epoch-e3"]);
    expect(String(process.inputs.create)).to.include("'CUDA_VISIBLE_DEVICES=1'").and.include("'--port' '8102'");
  });

  it("keeps the API key secret, off command lines and out of the serialised provider", async () => {
    const fleet = build();
    await promiseOf(fleet.engines);
    const holders: string[] = [];
    for (const r of registered) {
      // Every occurrence of the key must sit inside a secret; outside them it must not appear at all.
      const plain = JSON.stringify(r.inputs, (_k, v) => (reveal(v) !== v ? "[secret]" : v));
      expect(plain, r.name).to.not.include(API_KEY);
      if (JSON.stringify(r.inputs).includes(API_KEY)) holders.push(r.name);
      if (r.type === "command:remote:Command" && /^fleet-e\d-process$/.test(r.name)) expect(reveal(r.inputs.stdin)).to.equal(`VLLM_API_KEY='${API_KEY}'\n`);
    }
    // Only what must talk to the engine holds the key: its process (env file), its HTTP probes, and the
    // wave that restarts its KV component (runtime.restartKvPeers, the default).
    expect(holders.sort()).to.deep.equal(
      [...["e1", "e2", "e3"].flatMap((e) => [`fleet-${e}-cache`, `fleet-${e}-generation`, `fleet-${e}-process`]), "fleet-kv-wave-1"].sort(),
    );
    const discovery = registered.find((r) => r.name === "fleet-a")!.inputs;
    expect(discovery.__implementation).to.equal("dynamic-providers/host-discovery/provider.ts");
    const provider = String(discovery.__provider);
    expect(provider).to.not.include(SSH_KEY.split("\n")[1]);
    expect(provider).to.not.include(process.cwd());
  });

  it("with runtime.restartKvPeers, one restart wave per KV component, registered before any engine's proof", async () => {
    const fleet = mocks.build(fleetConfig({ runtime: { restartKvPeers: true } }), mockSecrets(API_KEY, SSH_KEY));
    const engines = await promiseOf(fleet.engines);
    const waves = registered.filter((r) => r.type === "pulumi-nodejs:dynamic/narwhal:PeerWave");
    expect(waves.map((w) => w.name)).to.deep.equal(["fleet-kv-wave-1"]);
    const wave = waves[0].inputs;
    const members = wave.members as Array<{ engineId: string; hostAlias: string; url: string; processIdentity: unknown; restartScript: string; login: { host: string } }>;
    expect(members.map((m) => [m.engineId, m.hostAlias, m.login.host])).to.deep.equal([
      ["e1", "a", "198.18.0.11"],
      ["e2", "b", "198.18.0.12"],
      ["e3", "a", "198.18.0.11"],
    ]);
    expect(members[1].processIdentity).to.deep.equal({ hostAlias: "b", pid: 42 });
    expect(members[1].restartScript).to.include("/var/lib/narwhal-fleet/mock/engines/e2").and.include(engines.e2.url.replace(/^http:\/\//, ""));
    // Credentials and the key reach the wave only as secrets.
    expect(reveal(wave.credentials)).to.deep.equal({ a: { privateKey: SSH_KEY }, b: { privateKey: SSH_KEY } });
    expect(wave.credentials).to.not.deep.equal(reveal(wave.credentials));
    expect(reveal(wave.apiKey)).to.equal(API_KEY).and.not.equal(wave.apiKey);
    // Each proof is bound to the processes of the engines whose handshakes it holds, and waits for the wave.
    // With each peer's start key (its own proof's), so a preview can hold a peer whose start only runs again.
    const generation = (e: string) => registered.find((r) => r.name === `fleet-${e}-generation`)!;
    expect(generation("e2").inputs.peers).to.deep.equal({
      e1: { url: engines.e1.url, processIdentity: { hostAlias: "a", pid: 42 }, processStartKey: generation("e1").inputs.processStartKey },
      e3: { url: engines.e3.url, processIdentity: { hostAlias: "a", pid: 42 }, processStartKey: generation("e3").inputs.processStartKey },
    });
    expect(generation("e1").inputs.processStartKey).to.match(/^sha256:[0-9a-f]{64}$/).and.not.equal(generation("e3").inputs.processStartKey);
    const at = (name: string) => registered.findIndex((r) => r.name === name);
    for (const e of ["e1", "e2", "e3"]) expect(at(`fleet-${e}-generation`), e).to.be.greaterThan(at("fleet-kv-wave-1"));
    // No NIXL version read is no evidence of the fix: the whole component restarts, and the wave says why.
    expect(wave.scope).to.deep.include({ kind: "component" });
    expect((wave.scope as { reason: string }).reason).to.match(/^NIXL unknown on e1, e2, e3 predates 1\.5\.0/);
  });

  it("with runtime.restartKvPeers and NIXL 1.5.0 on every engine, a restart is one engine's: the wave restarts nobody else and no proof is bound to a peer", async () => {
    checkedNixl = "1.5.0";
    try {
      const fleet = mocks.build(fleetConfig({ runtime: { restartKvPeers: true } }), mockSecrets(API_KEY, SSH_KEY));
      await promiseOf(fleet.engines);
      const wave = registered.find((r) => r.type === "pulumi-nodejs:dynamic/narwhal:PeerWave")!.inputs;
      expect(wave.scope).to.deep.include({ kind: "engine" });
      expect((wave.scope as { reason: string }).reason).to.include("only that engine restarts");
      for (const e of ["e1", "e2", "e3"]) expect(registered.find((r) => r.name === `fleet-${e}-generation`)!.inputs.peers, e).to.equal(undefined);
    } finally {
      checkedNixl = null;
    }
  });

  it("tells the router narwhal's individual restart policy, its default, for plans without CUDA IPC peers", async () => {
    const fleet = build();
    const policy = await promiseOf(fleet.attestation.routerRestartPolicy);
    expect(policy.policy).to.equal("individual");
    expect(policy.reason).to.match(/^every engine releases a stopped peer/);
  });

  it("with runtime.restartKvPeers off, no wave and no peers on any proof", async () => {
    const fleet = mocks.build(fleetConfig({ runtime: { restartKvPeers: false } }), mockSecrets(API_KEY, SSH_KEY));
    await promiseOf(fleet.engines);
    expect(registered.filter((r) => r.type === "pulumi-nodejs:dynamic/narwhal:PeerWave")).to.deep.equal([]);
    expect(registered.filter((r) => r.name.endsWith("-generation")).map((r) => r.inputs.peers)).to.deep.equal([undefined, undefined, undefined]);
  });

  it("reports the plan with roles and the router on the lowest-numbered engine's host", async () => {
    const fleet = build();
    const engines = await promiseOf(fleet.engines);
    expect(fleet.routerHost).to.equal("a");
    expect(Object.fromEntries(Object.entries(engines).map(([id, e]) => [id, [e.host, e.role, e.pid]]))).to.deep.equal({
      e1: ["a", "prefill", 42],
      e2: ["b", "decode", 42],
      e3: ["a", "decode", 42],
    });
  });
});

import { expect } from "chai";
import { twoHostFleet } from "../launch/inputs";
import { decideRollout as decideWith, recordedDeployment, type RecordedDeployment, type RolloutDecision } from "../../../lib/rollout/decide";
import { hostDiscoveryPlan } from "../../../lib/fleet/host-plan";
import { resolveEngineLaunch, type HostLaunchFacts } from "../../../lib/launch/policy";

const ENGINES = [
  { id: "p1", host: "a", role: "prefill", gpuIds: [0] },
  { id: "p2", host: "b", role: "prefill", gpuIds: [0] },
  { id: "d1", host: "a", role: "decode", gpuIds: [1] },
  { id: "d2", host: "b", role: "decode", gpuIds: [1] },
];

function spec(launch: Record<string, unknown> = {}, engines: unknown[] = ENGINES, extra: Record<string, unknown> = {}) {
  return twoHostFleet(engines, { launch, ...extra });
}

/** The decision with each host's policy digest as the program computes it from the config. */
const decideRollout = (s: ReturnType<typeof spec>, recorded: RecordedDeployment) =>
  decideWith(s, recorded, Object.fromEntries(s.hosts.map((h) => [h.alias, hostDiscoveryPlan(s, h).policyDigest])));

/** The engines a decision keeps on their recorded settings, with those settings. */
const heldBy = (d: RolloutDecision) => Object.fromEntries(d.record.pending.map((id) => [id, d.record.engines[id].settings]));

/** Every object's keys in reverse order: the engine hands outputs back with keys in an order of its own. */
const shuffled = (v: unknown): unknown =>
  Array.isArray(v) ? v.map(shuffled) : typeof v === "object" && v !== null ? Object.fromEntries(Object.entries(v).reverse().map(([k, x]) => [k, shuffled(x)])) : v;

/** Per host, the policy digest its discovery runs against under a decision. */
const digestsOf = (d: RolloutDecision) => Object.fromEntries(Object.entries(d.record.hosts).map(([alias, h]) => [alias, h.policyDigest]));

/** What an up of `s` records, as the engine hands the outputs back (a JSON round trip, keys reordered). */
function recordOf(s: ReturnType<typeof spec>, extra: Record<string, unknown> = {}): RecordedDeployment {
  return recordedDeployment(shuffled(JSON.parse(JSON.stringify({ rollout: decideRollout(s, {}).record, ...extra }))) as Record<string, unknown>);
}

const facts = (alias: string): HostLaunchFacts => ({
  alias,
  fabricInterface: "fab0",
  fabricAddress: "198.18.0.11",
  vendor: "nvidia",
  product: "H100",
  gpus: [{ index: 0 }, { index: 1 }],
  model: { dtype: "bfloat16", maxPositionEmbeddings: 32768 },
});

describe("rollout: which engines a change to their launch settings restarts in this up", () => {
  it("rolls a change that reaches every engine one engine per up, keeping the rest on their recorded settings", () => {
    const before = spec({ maxNumSeqs: 64 });
    const after = spec({ maxNumSeqs: 128 });
    const first = decideRollout(after, recordOf(before));
    expect(first.record).to.deep.include({ status: "rolling", wave: ["p1"], pending: ["p2", "d1", "d2"] });
    expect(Object.keys(heldBy(first))).to.deep.equal(["p2", "d1", "d2"]);
    expect(heldBy(first).p2.maxNumSeqs).to.equal(64);
    expect(first.record.engines.p1).to.deep.include({ onTarget: true });
    expect(first.record.engines.p1.settings.maxNumSeqs).to.equal(128);
    expect(first.record.engines.d2).to.deep.include({ onTarget: false });
    expect(first.message).to.match(/^rollout: rolling change \(maxNumSeqs 64 → 128\) over 4 engines/).and.include("this up restarts p1").and.include("p2 serves the prefill role meanwhile");

    // The next up continues from what this one recorded, and the last engine is a change of one.
    const second = decideRollout(after, recordedDeployment(JSON.parse(JSON.stringify({ rollout: first.record }))));
    expect(second.record).to.deep.include({ status: "rolling", wave: ["p2"], pending: ["d1", "d2"] });
    const third = decideRollout(after, recordedDeployment(JSON.parse(JSON.stringify({ rollout: second.record }))));
    expect(third.record).to.deep.include({ wave: ["d1"], pending: ["d2"] });
    const last = decideRollout(after, recordedDeployment(JSON.parse(JSON.stringify({ rollout: third.record }))));
    expect(last.record).to.deep.include({ status: "settled", wave: [], pending: [] });
    expect(heldBy(last)).to.deep.equal({});
    expect(last.message).to.equal("rollout: d2 restarts onto its new settings (maxNumSeqs 64 → 128); d1 serves the decode role meanwhile");
    expect(Object.values(last.record.engines).every((e) => e.onTarget)).to.equal(true);
  });

  it("keeps a host's discovery on its recorded policy while the rollout holds an engine of it, and moves it with its last engine", () => {
    const before = spec({ maxNumSeqs: 64 });
    const after = spec({ maxNumSeqs: 128 });
    const digest = (s: ReturnType<typeof spec>, alias: string) => hostDiscoveryPlan(s, s.hosts.find((h) => h.alias === alias)!).policyDigest;
    expect(digest(before, "a"), "the config's digest changes with the launch policy").to.not.equal(digest(after, "a"));
    const replay = (r: { record: unknown }) => recordedDeployment(JSON.parse(JSON.stringify({ rollout: r.record })));
    // p1 rolls on host a, where d1 waits; b holds p2 and d2: both hosts keep the digest they ran under.
    const first = decideRollout(after, recordOf(before));
    expect(digestsOf(first)).to.deep.equal({ a: digest(before, "a"), b: digest(before, "b") });
    const second = decideRollout(after, replay(first));
    // d1, a's last engine, rolls: a is discovered again against the new policy; b still holds d2.
    const third = decideRollout(after, replay(second));
    expect(third.record.wave).to.deep.equal(["d1"]);
    expect(digestsOf(third)).to.deep.equal({ a: digest(after, "a"), b: digest(before, "b") });
    expect(third.record.hosts).to.deep.equal({ a: { policyDigest: digest(after, "a") }, b: { policyDigest: digest(before, "b") } });
    expect(digestsOf(decideRollout(after, replay(third)))).to.deep.equal({ a: digest(after, "a"), b: digest(after, "b") });
  });

  it("holds an engine on its recorded settings in the plan it launches", () => {
    const before = spec({ maxNumSeqs: 64, engineEnv: { B: "1", A: "1" } });
    const after = spec({ maxNumSeqs: 128, engineEnv: { B: "2", A: "2" } });
    const decision = decideRollout(after, recordOf(before));
    const kept = resolveEngineLaunch(after, after.engines[1], facts("b"), decision.record.engines.p2.settings);
    expect(kept.policy).to.deep.include({ maxNumSeqs: 64, engineEnv: { B: "1", A: "1" } });
    // The same settings from the same config give the same inputs with and without the record, down to
    // the order the command sets the environment in, whatever order the record came back in.
    const original = resolveEngineLaunch(before, before.engines[1], facts("b"));
    expect(original).to.deep.equal(kept);
    expect(Object.keys(kept.policy.engineEnv!)).to.deep.equal(Object.keys(original.policy.engineEnv!)).and.deep.equal(["B", "A"]);
    expect(resolveEngineLaunch(after, after.engines[0], facts("a")).policy).to.deep.include({ maxNumSeqs: 128, engineEnv: { B: "2", A: "2" } });
    // An engine the rollout moves launches exactly what the config alone gives, byte for byte.
    const moved = resolveEngineLaunch(after, after.engines[0], facts("a"), decision.record.engines.p1.settings);
    expect(JSON.stringify(moved)).to.equal(JSON.stringify(resolveEngineLaunch(after, after.engines[0], facts("a"))));
  });

  it("restarts first the engines whose role keeps another, and an engine alone in its role only with the operator's consent", () => {
    const engines = [{ id: "p1", host: "a", role: "prefill", gpuIds: [0] }, { id: "d1", host: "a", role: "decode", gpuIds: [1] }, { id: "d2", host: "b", role: "decode" }];
    const replay = (r: { record: unknown }) => recordedDeployment(JSON.parse(JSON.stringify({ rollout: r.record })));
    const after = spec({ maxNumSeqs: 16 }, engines);
    const first = decideRollout(after, recordOf(spec({}, engines)));
    expect(first.record.wave).to.deep.equal(["d1"]);
    expect(first.outage).to.equal(undefined);
    expect(first.message).to.match(/d2 serves the decode role meanwhile\. The rollout stops before p1, alone in its role, unless rollout\.allowRoleOutage is set\.$/);
    const second = decideRollout(after, replay(first));
    expect(second.record).to.deep.include({ wave: ["d2"], pending: ["p1"] });
    // p1 is all that is left: the rollout stops before it, and says how to go on.
    expect(() => decideRollout(after, replay(second))).to.throw(
      "rollout: stopped before p1: p1 is the only prefill engine, so restarting it leaves that role with no engine to serve until readmitted. " +
        `Add another prefill engine (engines[].role), or set narwhal-fleet:rollout '{"allowRoleOutage": true}' to restart it anyway. Nothing was touched; d1, d2 keep serving.`,
    );
    const consented = spec({ maxNumSeqs: 16 }, engines, { rollout: { allowRoleOutage: true } });
    const last = decideRollout(consented, replay(second));
    expect(last.message).to.include("p1 is the only prefill engine: that role has no engine to serve while it restarts");
    expect(last.outage).to.equal(true);
    // A change of that one engine alone, outside a rollout, is the operator's own: it restarts, with the warning.
    const single = engines.map((e) => (e.id === "p1" ? { ...e, overrides: { maxNumSeqs: 16 } } : e));
    expect(decideRollout(spec({}, single), recordOf(spec({}, engines))).outage).to.equal(true);
    // Two engines, each alone in its role: the rollout cannot start without consent.
    const pair = [{ id: "p1", host: "a", role: "prefill" }, { id: "d1", host: "b", role: "decode" }];
    expect(() => decideRollout(spec({ maxNumSeqs: 16 }, pair), recordOf(spec({}, pair)))).to.throw(/^rollout: stopped before p1, d1: p1 is the only prefill engine, d1 is the only decode engine, so restarting them .* Add another prefill or decode engine/);
    const both = decideRollout(spec({ maxNumSeqs: 16 }, pair, { rollout: { allowRoleOutage: true } }), recordOf(spec({}, pair)));
    expect(both.record).to.deep.include({ wave: ["p1"], pending: ["d1"] });
    expect(both.outage).to.equal(true);
  });

  it("restarts every changed engine at once when the change also reaches a setting that does not roll", () => {
    const d = decideRollout(spec({ maxNumSeqs: 128, kvCacheDtype: "fp8" }), recordOf(spec({ maxNumSeqs: 64 })));
    expect(heldBy(d)).to.deep.equal({});
    expect(d.record).to.deep.include({ status: "settled", wave: [], pending: [] });
    expect(d.message).to.equal(
      "rollout: nothing rolls: p1, p2, d1, d2 restart at once in this up, because the change reaches other launch settings (dtype, KV cache dtype, block size, transport, ...) (p1, p2, d1, d2): only maxModelLen, maxNumSeqs, gpuMemoryUtilization, engineArgs, engineEnv roll: no engine serves from their stop until the router is swapped onto them",
    );
    // The runtime alone (an image, a vLLM command): every engine at once, and the preview says so.
    const runtime = decideRollout(spec({}, ENGINES, { runtime: { vllmCommand: "/opt/vllm-next/bin/vllm" } }), recordOf(spec({})));
    expect(heldBy(runtime)).to.deep.equal({});
    expect(runtime.message).to.equal(
      "rollout: nothing rolls: p1, p2, d1, d2 restart at once in this up, because the change reaches the runtime (image, vLLM command) (p1, p2, d1, d2): only maxModelLen, maxNumSeqs, gpuMemoryUtilization, engineArgs, engineEnv roll: no engine serves from their stop until the router is swapped onto them",
    );
    expect(runtime.outage).to.equal(true);
    // One engine moved to other GPUs beside a rolling change of two: nothing rolls, and all three restart.
    const moved = ENGINES.map((e) => (e.id === "d2" ? { ...e, gpuIds: [2] } : e.id === "p1" || e.id === "p2" ? { ...e, overrides: { maxNumSeqs: 32 } } : e));
    const mixed = decideRollout(spec({}, moved), recordOf(spec({})));
    expect(mixed.message).to.equal("rollout: nothing rolls: p1, p2, d2 restart at once in this up, because the change reaches the engine's host, ports or GPUs (d2): only maxModelLen, maxNumSeqs, gpuMemoryUtilization, engineArgs, engineEnv roll");
    // A role or an SLO is no launch setting: the change still rolls.
    const judged = ENGINES.map((e) => (e.id === "d1" ? { ...e, overrides: { slo: { ttftS: 2 } } } : e));
    expect(decideRollout(spec({ maxNumSeqs: 128 }, judged), recordOf(spec({ maxNumSeqs: 64 }))).record.status).to.equal("rolling");
    // A runtime deadline is not a launch setting: the change still rolls.
    const deadline = decideRollout(spec({ maxNumSeqs: 128 }, ENGINES, { runtime: { deadlinesS: { stop: 99 } } }), recordOf(spec({ maxNumSeqs: 64 })));
    expect(deadline.record.status).to.equal("rolling");
  });

  it("restarts at once under narwhal's whole_wave policy or a KV component that restarts whole, as the last up recorded them", () => {
    const before = spec({ maxNumSeqs: 64 });
    const after = spec({ maxNumSeqs: 128 });
    const wave = decideRollout(after, recordOf(before, { routerRestartPolicy: { policy: "whole_wave", reason: "d1 has CUDA IPC peers" } }));
    expect(heldBy(wave)).to.deep.equal({});
    expect(wave.message).to.include("because narwhal's restart policy is whole_wave (d1 has CUDA IPC peers)");
    const component = decideRollout(after, recordOf(before, { restarts: [{ engines: ["p1", "d1"], kind: "component", reason: "NIXL 1.4.1" }, { engines: ["p2", "d2"], kind: "engine", reason: "1.5.0" }] }));
    expect(component.message).to.include("because their KV component (p1, d1) restarts whole: NIXL 1.4.1");
    const individual = decideRollout(after, recordOf(before, { routerRestartPolicy: { policy: "individual", reason: "" }, restarts: [{ engines: ["p1", "d1"], kind: "engine", reason: "" }] }));
    expect(individual.record.status).to.equal("rolling");
  });

  it("rolls nothing without a record (a first up, or a stack from before rollouts), and takes new engines as they are", () => {
    expect(heldBy(decideRollout(spec({ maxNumSeqs: 128 }), {}))).to.deep.equal({});
    expect(decideRollout(spec({ maxNumSeqs: 128 }), recordedDeployment(undefined)).record.status).to.equal("settled");
    // Two recorded engines change, a new one starts on the config's settings.
    const two = [{ id: "p1", host: "a", role: "prefill", gpuIds: [0] }, { id: "d1", host: "a", role: "decode", gpuIds: [1] }];
    const d = decideRollout(spec({ maxNumSeqs: 16 }, [...two, { id: "d2", host: "b", role: "decode" }]), recordOf(spec({}, two)));
    expect(d.record).to.deep.include({ wave: ["d1"], pending: ["p1"] });
    expect(d.record.engines.d2).to.deep.include({ onTarget: true });
  });

  it("treats a malformed record as no record for that engine", () => {
    const r = recordedDeployment({ rollout: { engines: { p1: { settings: "x", fixed: 1 }, p2: null, d1: { settings: {}, fixed: { runtime: "x" } } } }, restarts: "no" });
    expect(r).to.deep.equal({ rollout: { engines: {}, hosts: {} } });
  });
});

import { expect } from "chai";
import type { Stack } from "@pulumi/pulumi/automation";
import { runInHost, simUp } from "../../sim/hosts";
import type { SimHost } from "../../sim/hosts/host";
import { E2E_TIME_SCALE, openStack, type EngineEntry } from "./support/stack";
import { plannedChanges } from "./support/preview";
import { FLEET_AFTER_ENGINE, processEvidence } from "./support/names";
import { awaitHealthy, restartByHand } from "./support/restart";
import { expectNarwhalCheckAgrees } from "./support/narwhal-check";
import { invalidationSummary } from "../../lib/report/preview";
import { plannedRemeasure, remeasuredSince, snapshotEvidence } from "./support/remeasured";

const STACK = "e2e-wave";
const WAVE = "fleet-kv-wave-1";
const quiet = { onOutput: () => undefined };

interface WaveState {
  recorded: Record<string, { processStartTime: number }>;
  lastWave?: { restarted: Array<{ engineId: string; reason: string }>; wave: string[] };
}

describe("e2e: runtime.restartKvPeers, one restart wave per KV component", function () {
  this.timeout(1_500_000);
  let stack: Stack;
  let host: SimHost;
  let engines: EngineEntry[];

  const livePid = async (id: string) => Number((await runInHost(host.alias, ["cat", `/var/lib/narwhal-fleet/${STACK}/engines/${id}/pid`])).stdout.trim());
  const livePids = async () => Object.fromEntries(await Promise.all(engines.map(async (e) => [e.id, await livePid(e.id)] as const)));
  async function resourceOutputs<T>(name: string): Promise<T> {
    const state = (await stack.exportStack()).deployment as { resources: Array<{ urn: string; outputs?: unknown }> };
    return state.resources.find((r) => r.urn.endsWith(`::${name}`))!.outputs as T;
  }
  async function urnOf(name: string): Promise<string> {
    const state = (await stack.exportStack()).deployment as { resources: Array<{ urn: string }> };
    return state.resources.find((r) => r.urn.endsWith(`::${name}`))!.urn;
  }

  before(async () => {
    // A host of its own with four GPUs: three engines, one prefill and two decode, one KV component.
    host = (await simUp({ hosts: 5, aliases: ["sim5"], layouts: { sim5: "h100:4" }, timeScale: E2E_TIME_SCALE })).hosts.find((h) => h.alias === "sim5")!;
    engines = [
      { id: "w1", host: host.alias, gpuIds: [0], port: 8701, attestationPort: 8711, nixlPort: 5801 },
      { id: "w2", host: host.alias, gpuIds: [1], port: 8702, attestationPort: 8712, nixlPort: 5802 },
      { id: "w3", host: host.alias, gpuIds: [2], port: 8703, attestationPort: 8713, nixlPort: 5803 },
    ];
    stack = await openStack(STACK, [host], engines, { model: { servedName: "tiny-llama", checkpointDir: host.modelDir }, runtime: { kind: "native", restartKvPeers: true } });
    await stack.destroy(quiet);
    await stack.up(quiet);
  });

  after(async () => {
    if (stack) await stack.destroy(quiet);
  });

  it("after an engine restarts by hand, preview names its peers' proofs; up restarts the peers at once and the preflight passes", async () => {
    expect([...(await plannedChanges(stack, { refresh: true })).keys()]).to.deep.equal([]);
    await restartByHand(STACK, "w2", host.alias);
    await awaitHealthy(`http://${host.address}:8702`);
    const before = await livePids();

    const steps = await plannedChanges(stack, { refresh: true });
    expect(steps.get("fleet-w2-generation")).to.deep.include({ op: "replace", keys: ["generation"] });
    // The other two hold a handshake of w2's old process: their proofs go, and the wave restarts them.
    for (const id of ["w1", "w3"]) expect(steps.get(`fleet-${id}-generation`), id).to.deep.include({ op: "replace", keys: ["peers"] });
    expect(steps.get(WAVE)?.op).to.equal("update");
    expect([...steps.keys()].sort()).to.deep.equal([...["w1", "w2", "w3"].flatMap(processEvidence), ...FLEET_AFTER_ENGINE, WAVE].sort());
    // The preview report says why, in the operator's terms: w2's start moved under w1's proof.
    const report = await invalidationSummary(stack, { refresh: true });
    const c = report.gates.find((g) => g.gate === "C")!;
    const w1 = c.replaced.find((e) => e.name === "fleet-w1-generation")!;
    expect(w1.changes).to.have.length(1);
    expect(w1.changes[0]).to.deep.include({ input: "peers", observed: "a peer started anew" });
    expect(w1.changes[0]!.old).to.not.equal(w1.changes[0]!.new);
    expect(c.updated.map((e) => [e.name, e.kind])).to.deep.equal([[WAVE, "KV peer restart wave"]]);

    const snapshot = await snapshotEvidence(stack);
    await stack.up({ refresh: true, ...quiet });
    // Exactly what the preview said, from the evidence records' own times.
    expect(await remeasuredSince(snapshot)).to.deep.equal(plannedRemeasure(steps, snapshot));
    const after = await livePids();
    expect(after.w2, "w2 already restarted: not again").to.equal(before.w2);
    for (const id of ["w1", "w3"]) expect(after[id], id).to.not.equal(before[id]);
    const wave = await resourceOutputs<WaveState>(WAVE);
    expect(wave.lastWave?.restarted.map((r) => r.engineId)).to.deep.equal(["w2"]);
    expect(wave.lastWave?.wave).to.deep.equal(["w1", "w3"]);
    expect([...(await plannedChanges(stack, { refresh: true })).keys()]).to.deep.equal([]);
    await expectNarwhalCheckAgrees(stack);
  });

  it("an engine the program starts anew takes its KV component along in the same up", async () => {
    const before = await livePids();
    const replace = [await urnOf("fleet-w1-process")];
    const steps = await plannedChanges(stack, { refresh: true, replace });
    // The process goes before its replacement starts, so the engine itself replaces what depends on it
    // (its reasons, not the providers', are the keys); the peers' proofs are among them through `peers`.
    expect(steps.get("fleet-w1-process")).to.deep.include({ op: "replace", keys: ["id"] });
    for (const id of ["w1", "w2", "w3"]) expect(steps.get(`fleet-${id}-generation`)?.op, id).to.equal("replace");
    expect(steps.get(WAVE)?.op).to.equal("update");
    expect([...steps.keys()].sort()).to.deep.equal(["fleet-w1-process", ...["w1", "w2", "w3"].flatMap(processEvidence), ...FLEET_AFTER_ENGINE, WAVE].sort());

    const snapshot = await snapshotEvidence(stack);
    await stack.up({ refresh: true, replace, ...quiet });
    expect(await remeasuredSince(snapshot)).to.deep.equal(plannedRemeasure(steps, snapshot));
    const after = await livePids();
    for (const id of ["w1", "w2", "w3"]) expect(after[id], id).to.not.equal(before[id]);
    const wave = await resourceOutputs<WaveState>(WAVE);
    expect(wave.lastWave?.restarted.map((r) => r.engineId)).to.deep.equal(["w1"]);
    expect(wave.lastWave?.wave).to.deep.equal(["w2", "w3"]);
    expect([...(await plannedChanges(stack, { refresh: true })).keys()]).to.deep.equal([]);
    await expectNarwhalCheckAgrees(stack);
  });
});

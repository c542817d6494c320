/**
 * A fleet whose evidence lets one engine restart alone: every image carries NIXL 1.5.0 (the simulated host
 * declares it), no plan has CUDA IPC peers, and each role has two pinned engines. With the defaults (the
 * KV peer wave on), an engine killed or hung is restarted by one `up --refresh` without its peers, and
 * clients through the router see failures at most while the router has not yet noticed the engine gone
 * (its detection window), none during the `up`, and none at the router's swap.
 */
import { expect } from "chai";
import { request } from "undici";
import type { Stack } from "@pulumi/pulumi/automation";
import { runInHost, simUp } from "../../sim/hosts";
import type { SimHost } from "../../sim/hosts/host";
import { E2E_TIME_SCALE, openStack, type EngineEntry } from "./support/stack";
import { expectNothingPlanned, plannedWithSummary } from "./support/preview";
import { fleetAfterEngine, processEvidence } from "./support/names";
import { plannedRemeasure, remeasuredSince, snapshotEvidence } from "./support/remeasured";
import { startTraffic, type TrafficReport } from "./support/router-traffic";

const STACK = "e2e-engine-scope";
const HOST = "sim16";
const WAVE = "fleet-kv-wave-1";
const ENGINES = ["p1", "p2", "d1", "d2"];
const quiet = { onOutput: () => undefined };
/** How long clients wait after the up for a served request. */
const SERVED_AGAIN_BOUND_MS = 60_000;
const runDir = (id: string) => `/var/lib/narwhal-fleet/${STACK}/engines/${id}`;

describe("e2e: one engine restarted alone (NIXL 1.5.0 everywhere, two engines per role)", function () {
  this.timeout(1_200_000);
  let stack: Stack;
  let host: SimHost;

  const livePid = async (id: string) => Number((await runInHost(HOST, ["cat", `${runDir(id)}/pid`])).stdout.trim());
  const livePids = async () => Object.fromEntries(await Promise.all(ENGINES.map(async (id) => [id, await livePid(id)] as const)));

  /** The engines the serving router holds out of placement (`/narwhal/state`'s `ejected`). */
  async function ejected(routerUrl: string): Promise<string[]> {
    const r = await request(`${routerUrl}/narwhal/state`, { headersTimeout: 10_000, bodyTimeout: 10_000 });
    return ((await r.body.json()) as { ejected?: string[] }).ejected ?? [];
  }

  before(async () => {
    host = (await simUp({ hosts: 16, aliases: [HOST], layouts: { [HOST]: "h100:4" }, nixl: { [HOST]: "1.5.0" }, timeScale: E2E_TIME_SCALE })).hosts.find((h) => h.alias === HOST)!;
    const engines: EngineEntry[] = [
      { id: "p1", host: HOST, gpuIds: [0], port: 8861, attestationPort: 8871, nixlPort: 5961, role: "prefill", pin: true },
      { id: "p2", host: HOST, gpuIds: [1], port: 8862, attestationPort: 8872, nixlPort: 5962, role: "prefill", pin: true },
      { id: "d1", host: HOST, gpuIds: [2], port: 8863, attestationPort: 8873, nixlPort: 5963, role: "decode", pin: true },
      { id: "d2", host: HOST, gpuIds: [3], port: 8864, attestationPort: 8874, nixlPort: 5964, role: "decode", pin: true },
    ];
    // A refresh calls an engine hung after 5 s without an answer (the default is 15): the hung case waits it
    // out in its preview and its up.
    stack = await openStack(STACK, [host], engines, { router: { port: 8866 }, observability: { prometheusPort: 9866, freshnessPort: 9867 }, runtime: { deadlinesS: { health: 5 } } });
    // The defaults: the restart scope comes from the evidence alone.
    await stack.removeConfig("narwhal-fleet:runtime.restartKvPeers", true);
    await stack.destroy(quiet);
    await stack.up(quiet);
  });

  after(async () => {
    await stack?.destroy(quiet);
  });

  /**
   * Clients through the router from before the fault on `id` until one `up --refresh` restored it: waits,
   * bounded, until the router holds the engine out (its detection), checks that the preview restarts that
   * engine alone, runs the up, and returns what the clients saw and when.
   */
  async function recoverAlone(id: string, signal: "KILL" | "STOP", detectionBoundMs: number): Promise<{ report: TrafficReport; faultAt: number; detectedAt: number; upAt: number }> {
    const routerUrl = (await stack.outputs()).routerUrl.value as string;
    const traffic = startTraffic(routerUrl, ENGINES.map((e, i) => ({ id: e, url: `http://${host.address}:${8861 + i}` })));
    const at = { faultAt: 0, detectedAt: 0, upAt: 0 };
    try {
      expect(await traffic.servedAgain(Date.now(), SERVED_AGAIN_BOUND_MS), "a request served before the fault").to.equal(true);
      at.faultAt = Date.now();
      await runInHost(HOST, ["sh", "-c", `kill -${signal} "$(cat ${runDir(id)}/pid)"`]);
      while (!(await ejected(routerUrl)).includes(id)) {
        expect(Date.now() - at.faultAt, `the router held ${id} out within ${detectionBoundMs / 1000} s`).to.be.below(detectionBoundMs);
        await new Promise((r) => setTimeout(r, 200));
      }
      at.detectedAt = Date.now();

      const { steps, summary } = await plannedWithSummary(stack, { refresh: true });
      expect(steps.get(`fleet-${id}-liveness`)).to.deep.include({ op: "replace", keys: ["serving"] });
      expect(steps.get(`fleet-${id}-process`)).to.deep.include({ op: "replace", keys: ["triggers"] });
      // Only the engine's own evidence and what the fleet measured across it: the other engines' proofs are
      // bound to no peer where only a restarted engine restarts, so nothing of theirs is planned.
      // (The component's wave resource records who restarted, an update that restarts nobody else.)
      const planned = [...steps.keys()].filter((n) => n !== WAVE).sort();
      expect(planned).to.deep.equal([`fleet-${id}-liveness`, `fleet-${id}-drain`, `fleet-${id}-process`, ...processEvidence(id), ...fleetAfterEngine([HOST])].sort());
      expect(summary.serving.out.map((o) => o.engine)).to.deep.equal([id]);
      expect(summary.serving.throughout).to.deep.equal(ENGINES.filter((e) => e !== id).sort());
      expect(summary.serving).to.not.have.property("wave");

      const before = await livePids();
      const snapshot = await snapshotEvidence(stack);
      at.upAt = Date.now();
      await stack.up({ refresh: true, ...quiet });
      expect(await remeasuredSince(snapshot)).to.deep.equal(plannedRemeasure(steps, snapshot));
      const after = await livePids();
      for (const e of ENGINES) expect(after[e] !== before[e], `${e} restarted by the up`).to.equal(e === id);
      // Back through narwhal's own readmission: the swapped router took over the serving one's hold and
      // validated the new process against the new store, a fabric leg with a serving peer among its gates.
      const { engines } = (await (await fetch(`${routerUrl}/narwhal/lifecycle`, { signal: AbortSignal.timeout(10_000) })).json()) as { engines: Record<string, { state: string; accepts_new: boolean; checks: string[] }> };
      expect(engines[id]).to.deep.include({ state: "active", accepts_new: true });
      expect(engines[id].checks).to.include.members(["profile generation", "generation", "final health"]);
      expect(engines[id].checks.filter((c) => /^fabric (produce to|consume from) [pd][12]$/.test(c)), JSON.stringify(engines[id].checks)).to.have.length(1);
      expect(await traffic.servedAgain(Date.now(), SERVED_AGAIN_BOUND_MS), "a request served after the up").to.equal(true);
    } catch (err) {
      await traffic.stop(HOST, `/var/lib/narwhal-fleet/${STACK}/router`);
      throw err;
    }
    const report = await traffic.stop(HOST, `/var/lib/narwhal-fleet/${STACK}/router`);
    const { sent, failed, longestGapS } = report;
    console.log(
      `      ${id} ${signal === "KILL" ? "killed" : "hung"}: the router held it out after ${((at.detectedAt - at.faultAt) / 1000).toFixed(1)} s; ${sent.length} requests, ` +
        `${sent.filter((r) => r.outcome === 200).length} served, ${failed.length} failed (${failed.filter((r) => r.start < at.detectedAt).length} sent before the router held ${id} out), ` +
        `${report.retriedAt.length} attempts retried elsewhere (${JSON.stringify(report.retriedAt)}); longest time without a served request ${longestGapS.toFixed(1)} s`,
    );
    // From the moment the router held the engine out until the fleet converged, nothing failed: not while
    // it restarted and was proved again, not at the router's swap onto its new profile.
    expect(failed.filter((r) => r.start >= at.detectedAt).map((r) => `${r.outcome} ${r.reason ?? ""} at ${r.engines.join("+")}`)).to.deep.equal([]);
    expect(sent.filter((r) => r.start >= at.upAt && r.outcome === 200).length, "requests served during the up").to.be.greaterThan(10);
    await expectNothingPlanned(stack, { refresh: true });
    return { report, ...at };
  }

  it("a prefill engine killed: the router holds it out at its first refused attempt, and no request fails while one up restarts it alone", async () => {
    // The image checks read NIXL 1.5.0 on every engine: the component restarts one engine at a time.
    const [scope] = (await stack.outputs()).restarts.value as Array<{ engines: string[]; kind: string; reason: string }>;
    expect(scope).to.deep.include({ engines: ENGINES, kind: "engine" });
    expect(scope.reason).to.match(/^every member runs NIXL 1\.5\.0 or later/);
    // Both decode engines read KV from p1, so each holds its old process's NIXL state: on NIXL 1.5.0 their
    // handshakes with the new process do not crash them, so neither restarts.
    const { report } = await recoverAlone("p1", "KILL", 60_000);
    // A refused connection is retried on another engine at once: not even the detection costs a request.
    expect(report.failed).to.deep.equal([]);
  });

  it("a decode engine hung (stopped, its port open): failures only until the router holds it out, none while one up restarts it alone", async () => {
    const { report, faultAt, detectedAt } = await recoverAlone("d2", "STOP", 120_000);
    // What failed was sent to the hung engine before the router gave up on it.
    for (const r of report.failed) expect(r.start, JSON.stringify(r)).to.be.within(faultAt - 1_000, detectedAt);
  });
});

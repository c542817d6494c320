/**
 * The faults an operator meets, on one stack of four engines on two hosts with the defaults (the KV peer
 * wave on; a hung engine is tried on a fleet that restarts one engine at a time, engine-scope.test.ts):
 * each is injected by hand, then ONE `pulumi up --refresh` must converge, a refreshing preview
 * after it plans nothing, and the evidence records' own times show that exactly what the preview planned
 * was measured again: the faulty engine, its KV component (every other engine, restarted by the wave)
 * and what was measured across them; the router, its monitoring and a client's requests through it too.
 */
import { expect } from "chai";
import { execFileSync } from "node:child_process";
import { request } from "undici";
import type { Stack } from "@pulumi/pulumi/automation";
import { runInHost, simUp } from "../../sim/hosts";
import type { SimHost } from "../../sim/hosts/host";
import { E2E_TIME_SCALE, openStack, type EngineEntry } from "./support/stack";
import { expectNothingPlanned, plannedChanges, plannedWithSummary, type PlannedStep } from "./support/preview";
import { fleetAfterEngine, processEvidence } from "./support/names";
import { awaitHealthy, restartByHand } from "./support/restart";
import { expectNarwhalCheckAgrees } from "./support/narwhal-check";
import { plannedRemeasure, remeasuredSince, snapshotEvidence } from "./support/remeasured";
import { EvidenceStore, evidenceRoot } from "../../lib/evidence/store";
import { PROJECT_ROOT } from "./support/stack";
import { startTraffic, type TrafficReport } from "./support/router-traffic";

const STACK = "e2e-faults";
const WAVE = "fleet-kv-wave-1";
const ENGINES = ["f1", "f2", "f3", "f4"];
const quiet = { onOutput: () => undefined };
/** How long clients wait after a recovery's up for a served request before the outage is measured. */
const SERVED_AGAIN_BOUND_MS = 60_000;
const runDir = (id: string) => `/var/lib/narwhal-fleet/${STACK}/engines/${id}`;

interface WaveState {
  lastWave?: { restarted: Array<{ engineId: string; reason: string }>; wave: string[] };
}

describe("e2e: one up --refresh after each fault an operator meets (an engine killed, one restarted by hand; the router host rebooted)", function () {
  this.timeout(1_800_000);
  let stack: Stack;
  let big: SimHost;
  let small: SimHost;
  let engines: EngineEntry[];

  const hostOf = (id: string) => (id === "f4" ? small : big);
  const livePid = async (id: string) => Number((await runInHost(hostOf(id).alias, ["cat", `${runDir(id)}/pid`])).stdout.trim());
  const livePids = async () => Object.fromEntries(await Promise.all(ENGINES.map(async (id) => [id, await livePid(id)] as const)));
  async function waveState(): Promise<WaveState> {
    const state = (await stack.exportStack()).deployment as { resources: Array<{ urn: string; outputs?: unknown }> };
    return state.resources.find((r) => r.urn.endsWith(`::${WAVE}`))!.outputs as WaveState;
  }

  /** The router's pid on its host (sim5) every half second until `stop` resolves: who served when. */
  function sampleRouter(): { stop: () => Promise<Array<{ at: number; pid: string }>> } {
    const samples: Array<{ at: number; pid: string }> = [];
    let sampling = true;
    const loop = (async () => {
      while (sampling) {
        const pid = (await runInHost(big.alias, ["sh", "-c", `cat /var/lib/narwhal-fleet/${STACK}/router/pid 2>/dev/null || true`])).stdout.trim();
        samples.push({ at: Date.now(), pid });
        await new Promise((r) => setTimeout(r, 500));
      }
    })();
    return { stop: async () => ((sampling = false), await loop, samples) };
  }

  /**
   * Clients through the router from before a fault until its one `up` converged: what a user saw. The
   * figures are printed for docs/invalidation.md's table of outages per fault.
   */
  async function clientsThrough(fault: string, recover: () => Promise<void>): Promise<TrafficReport> {
    const routerUrl = (await stack.outputs()).routerUrl.value as string;
    const traffic = startTraffic(routerUrl, engines.map((e) => ({ id: e.id, url: `http://${hostOf(e.id).address}:${e.port}` })));
    let report: TrafficReport | undefined;
    try {
      await recover();
      // The outage ends with the first request served after the up, not with the up itself.
      const back = await traffic.servedAgain(Date.now(), SERVED_AGAIN_BOUND_MS);
      if (!back) console.log(`      outage (${fault}): nothing served within ${SERVED_AGAIN_BOUND_MS / 1000} s of the up`);
    } finally {
      report = await traffic.stop(big.alias, `/var/lib/narwhal-fleet/${STACK}/router`);
      const { sent, failed, longestGapS } = report;
      const byOutcome: Record<string, number> = {};
      for (const r of failed) byOutcome[`${r.outcome}${r.reason ? ` ${r.reason}` : ""}`] = (byOutcome[`${r.outcome}${r.reason ? ` ${r.reason}` : ""}`] ?? 0) + 1;
      console.log(`      outage (${fault}): failed by answer and the router's reason ${JSON.stringify(byOutcome)}`);
      console.log(
        `      outage (${fault}): ${sent.length} sent, ${sent.filter((r) => r.outcome === 200).length} served, ${failed.length} failed ` +
          `(${failed.filter((r) => r.engines.length === 0).length} reached no engine, ${failed.filter((r) => r.reason === "no_engine").length} found no placeable engine of a role); ` +
          `longest time without a served request ${longestGapS.toFixed(1)} s`,
      );
    }
    return report;
  }

  /**
   * Every failed request was the router's own answer (its journal has it): the router's front held the
   * requests that came while the router was swapped onto the new store, where a client used to meet a
   * refused connection. What still fails is the router refusing while the engines restart (Narwhal's
   * `not_ready` during the KV wave).
   */
  function expectEveryFailureFromTheRouter(report: TrafficReport): void {
    const missed = report.failed.filter((r) => !r.journaled);
    expect(missed, `failed before reaching the router: ${JSON.stringify(missed.slice(0, 5))}`).to.deep.equal([]);
  }

  /** `iid/gate` of every NarwhalEvidenceStale alert Prometheus (on sim5) has firing. */
  async function staleEvidence(): Promise<string[]> {
    const r = await request(`http://${big.address}:9851/api/v1/alerts`, { headersTimeout: 10_000, bodyTimeout: 10_000 });
    const alerts = ((await r.body.json()) as { data: { alerts: Array<{ labels: Record<string, string>; state: string }> } }).data.alerts;
    return alerts
      .filter((a) => a.labels.alertname === "NarwhalEvidenceStale" && a.state === "firing")
      .map((a) => `${a.labels.iid ?? "-"}/${a.labels.gate}`)
      .sort();
  }

  /** Waits, bounded, until the firing stale-evidence alerts satisfy `ok` (scrapes and rules run every 2 s). */
  async function awaitStaleEvidence(ok: (firing: string[]) => boolean, what: string): Promise<string[]> {
    const deadline = Date.now() + 60_000;
    let firing = await staleEvidence();
    while (!ok(firing) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 500));
      firing = await staleEvidence();
    }
    expect(ok(firing), `${what}: firing ${JSON.stringify(firing)}`).to.equal(true);
    return firing;
  }

  /** When the newest generation record of `id` was started: its engine proved again. */
  async function provedAt(id: string): Promise<number> {
    const store = new EvidenceStore(evidenceRoot(PROJECT_ROOT, STACK));
    let latest = 0;
    for (const r of await store.list("generation")) {
      const rec = (await store.read(r.relativePath, r.digest)) as unknown as { subject: { alias: string }; startedAt: string };
      if (rec.subject.alias === id) latest = Math.max(latest, Date.parse(rec.startedAt));
    }
    return latest;
  }

  /**
   * Each engine's newest profile sweep since `t`, with what its engine served besides the sweep and how
   * long the sweep waited for it to serve nobody else: the reservation the runbook asks of a re-measure
   * while the router serves (lib/engine/reservation.ts).
   */
  async function reservationsSince(t: number): Promise<Record<string, { idle: boolean; reasons: string[]; foreign: number; waitedS: number; sweeps: number }>> {
    const store = new EvidenceStore(evidenceRoot(PROJECT_ROOT, STACK));
    const out: Record<string, { at: number; idle: boolean; reasons: string[]; foreign: number; waitedS: number; sweeps: number }> = {};
    for (const r of await store.list("profile")) {
      const rec = (await store.read(r.relativePath, r.digest)) as unknown as { subject: { alias: string }; startedAt: string; observations: { reservation?: { idle: boolean; reasons: string[]; engines: Array<{ foreign: number }>; samples?: { quietWaitS: number } } } };
      const at = Date.parse(rec.startedAt);
      const reservation = rec.observations.reservation;
      if (at < t || !reservation) continue;
      const was = out[rec.subject.alias];
      const sweeps = (was?.sweeps ?? 0) + 1;
      if (!was || at > was.at) out[rec.subject.alias] = { at, idle: reservation.idle, reasons: reservation.reasons, foreign: reservation.engines[0]?.foreign ?? 0, waitedS: reservation.samples?.quietWaitS ?? 0, sweeps };
      else was.sweeps = sweeps;
    }
    return Object.fromEntries(Object.entries(out).map(([id, { at: _at, ...rest }]) => [id, rest]));
  }

  /**
   * The one `up --refresh` after a fault: it succeeds, measures again exactly what the preview planned
   * (from the records' own times), restarts every engine the preview names, and leaves nothing to do.
   */
  async function expectOneUpConverges(steps: ReadonlyMap<string, PlannedStep>, restarted: string[]): Promise<void> {
    const before = await livePids();
    const snapshot = await snapshotEvidence(stack);
    await stack.up({ refresh: true, ...quiet });
    expect(await remeasuredSince(snapshot)).to.deep.equal(plannedRemeasure(steps, snapshot));
    const after = await livePids();
    for (const id of ENGINES) expect(after[id] !== before[id], `${id} restarted by the up`).to.equal(restarted.includes(id));
    await expectNothingPlanned(stack, { refresh: true });
  }

  /** A fault the program itself must restart (killed, hung, gone): the engine's liveness names why. */
  function expectRestartPlanned(steps: ReadonlyMap<string, PlannedStep>, id: string): void {
    expect(steps.get(`fleet-${id}-liveness`)).to.deep.include({ op: "replace", keys: ["serving"] });
    expect(steps.get(`fleet-${id}-process`)).to.deep.include({ op: "replace", keys: ["triggers"] });
    // Drained on the serving router first: it already holds a dead engine out, so the outcome says so.
    expect(steps.get(`fleet-${id}-drain`)?.op).to.equal("update");
    expect(steps.get(WAVE)?.op).to.equal("update");
    const others = ENGINES.filter((e) => e !== id);
    expect([...steps.keys()].sort()).to.deep.equal([`fleet-${id}-liveness`, `fleet-${id}-drain`, `fleet-${id}-process`, ...ENGINES.flatMap(processEvidence), ...fleetAfterEngine(["sim5", "sim8"]), WAVE].sort());
    for (const e of others) expect(steps.has(`fleet-${e}-process`), `${e}'s own process resource`).to.equal(false);
  }

  before(async () => {
    // One host with four GPUs for three engines and one with two for the fourth: one KV component.
    const all = (await simUp({ hosts: 8, aliases: ["sim5", "sim8"], layouts: { sim5: "h100:4" }, timeScale: E2E_TIME_SCALE })).hosts;
    [big, small] = ["sim5", "sim8"].map((a) => all.find((h) => h.alias === a)!) as [SimHost, SimHost];
    engines = [
      { id: "f1", host: big.alias, gpuIds: [0], port: 8801, attestationPort: 8811, nixlPort: 5901 },
      { id: "f2", host: big.alias, gpuIds: [1], port: 8802, attestationPort: 8812, nixlPort: 5902 },
      { id: "f3", host: big.alias, gpuIds: [2], port: 8803, attestationPort: 8813, nixlPort: 5903 },
      { id: "f4", host: small.alias, gpuIds: [0], port: 8804, attestationPort: 8814, nixlPort: 5904 },
    ];
    stack = await openStack(STACK, [big, small], engines, { router: { port: 8851 }, observability: { prometheusPort: 9851, freshnessPort: 9852, scrapeIntervalS: 2 } });
    // The defaults: no restartKvPeers key at all.
    await stack.removeConfig("narwhal-fleet:runtime.restartKvPeers", true);
    await stack.destroy(quiet);
    await stack.up(quiet);
  });

  after(async () => {
    await stack?.destroy(quiet);
  });

  it("(a) an engine killed: preview names it not serving; the up restarts it with its KV component, the preflight passes, and the router serves throughout", async () => {
    await expectNothingPlanned(stack, { refresh: true });
    // Clients through the router from before the fault until the fleet converged again.
    let samples: Array<{ at: number; pid: string }> = [];
    const faultAt = Date.now();
    const report = await clientsThrough("a, engine killed", async () => {
      await runInHost(big.alias, ["sh", "-c", `kill -KILL "$(cat ${runDir("f2")}/pid)"`]);
      const { steps, summary } = await plannedWithSummary(stack, { refresh: true });
      expectRestartPlanned(steps, "f2");
      // The preview report gives the probe's words as the reason.
      // f2 starts again and the KV wave takes the others with it: the report says none serves until the swap.
      expect(summary.serving.out.map((o) => o.engine)).to.deep.equal(ENGINES);
      expect(summary.serving.throughout).to.deep.equal([]);
      expect(summary.serving.wave).to.match(/so the whole KV component restarts together$/);
      const c = summary.gates.find((g) => g.gate === "C")!;
      const liveness = c.replaced.find((e) => e.name === "fleet-f2-liveness")!;
      expect(liveness.kind).to.equal("engine liveness");
      expect(liveness.changes[0]).to.deep.include({ input: "serving", old: "serving", new: "down" });
      expect(liveness.changes[0].observed).to.match(/\/health: connection refused \(ECONNREFUSED\) \(the engine process is gone\)$/);

      // The router is swapped in place, not replaced: it is not stopped when the engines' restart begins.
      expect(steps.get("fleet-router-host-router-process")?.op).to.equal("update");
      const router = sampleRouter();
      await expectOneUpConverges(steps, ENGINES);
      samples = await router.stop();
    });
    const { sent, failed } = report;
    // No request the router sent to engines answering /health throughout failed; the rest went to an
    // engine that was gone or restarting, or came while the router was being swapped.
    const atHealthy = failed.filter((r) => r.enginesHealthy);
    expect(atHealthy, JSON.stringify(atHealthy.slice(0, 5))).to.deep.equal([]);
    expectEveryFailureFromTheRouter(report);
    const served = sent.filter((r) => r.outcome === 200);
    expect(served.length, "requests served while the fleet recovered").to.be.greaterThan(10);
    expect(sent[sent.length - 1].outcome, "the last request, once the up converged").to.equal(200);
    expect((await waveState()).lastWave?.restarted.map((r) => r.engineId)).to.deep.equal(["f2"]);
    // The router that served before the fault still served once every engine had been restarted and proved
    // again; then it was swapped onto the new profile store.
    const old = samples[0].pid;
    const lastProved = Math.max(...(await Promise.all(ENGINES.map(provedAt))));
    expect(old).to.match(/^\d+$/);
    expect(samples.some((x) => x.pid === old && x.at >= lastProved), "the old router served past the engines' proofs").to.equal(true);
    expect(samples[samples.length - 1].pid).to.match(/^\d+$/).and.not.equal(old);
    // Clients sent through the serving router all along: every engine's re-measured profile proves what
    // the router sent it meanwhile (printed; whether it was kept off depends on when the router saw the
    // restart, docs/gates.md).
    const reserved = await reservationsSince(faultAt);
    console.log(`      profiles re-measured under traffic: ${JSON.stringify(reserved)}`);
    expect(Object.keys(reserved).sort()).to.deep.equal(ENGINES);
    for (const [id, r] of Object.entries(reserved)) expect(r.idle || r.reasons.length > 0, `${id}: an unreserved sweep says why`).to.equal(true);
    await expectNarwhalCheckAgrees(stack);
  });

  it("(b) an engine restarted by hand: Prometheus alerts on its stale evidence; it serves, so only its peers restart; the alert clears", async () => {
    await awaitStaleEvidence((f) => f.length === 0, "no stale evidence on the converged fleet");
    const report = await clientsThrough("b, engine restarted by hand", async () => {
      await restartByHand(STACK, "f2", big.alias);
      await awaitHealthy(`http://${big.address}:8802`);
      // The freshness exporter sees the new process start without any preview: an alert names f2's generation.
      const firing = await awaitStaleEvidence((f) => f.includes("f2/generation"), "the alert on f2's generation");
      expect(firing.filter((a) => !a.startsWith("f2/")), "alerts on the other engines").to.deep.equal([]);
      const steps = await plannedChanges(stack, { refresh: true });
      expect(steps.has("fleet-f2-liveness"), "a serving engine's liveness").to.equal(false);
      expect(steps.get("fleet-f2-generation")).to.deep.include({ op: "replace", keys: ["generation"] });
      for (const id of ["f1", "f3", "f4"]) expect(steps.get(`fleet-${id}-generation`), id).to.deep.include({ op: "replace", keys: ["peers"] });
      expect([...steps.keys()].sort()).to.deep.equal([...ENGINES.flatMap(processEvidence), ...fleetAfterEngine(["sim5", "sim8"]), WAVE].sort());
      await expectOneUpConverges(steps, ["f1", "f3", "f4"]);
    });
    expect((await waveState()).lastWave?.wave).to.deep.equal(["f1", "f3", "f4"]);
    expectEveryFailureFromTheRouter(report);
    await awaitStaleEvidence((f) => f.length === 0, "the alert cleared once the up converged");
  });

  it("(c) the router host rebooted with its Gate B install and monitoring files lost: its engines, sidecars, router and Prometheus all gone; the up installs and writes again and starts each", async () => {
    await clientsThrough("c, router host rebooted", async () => {
      // What a reboot leaves: sshd (it starts at boot) and nothing the stack started. The host's anchor
      // process holds its mounts, as the machine's own filesystems would.
      execFileSync("sh", ["-c", `for p in $(ip netns pids nw-${big.alias}); do
        case "$(cat /proc/$p/comm 2>/dev/null)|$(tr '\\0' ' ' < /proc/$p/cmdline 2>/dev/null)" in sshd*|*"|sleep infinity ") ;; *) kill -KILL "$p" 2>/dev/null || true ;; esac
      done`]);
      // And what the stack wrote in its folder there, gone with it (a cleanup, a disk restored without it):
      // the install the router and sidecars run from, and Prometheus' configuration and targets. The
      // simulated hosts share /var, so sim8's install, the same folder, goes too.
      const install = `/var/lib/narwhal-fleet/${STACK}/narwhal/narwhal-inference-0.7.0`;
      const prometheus = `/var/lib/narwhal-fleet/${STACK}/observability/prometheus`;
      expect((await runInHost(big.alias, ["rm", "-rf", install, prometheus])).code).to.equal(0);
      const steps = await plannedChanges(stack, { refresh: true });
      for (const alias of [big.alias, small.alias]) {
        expect(steps.get(`fleet-${alias}-narwhal-presence`), alias).to.deep.include({
          op: "update",
          observed: `the narwhal install on host ${alias} is gone: ${install} lacks install.json, venv/bin/python, venv/bin/narwhal-serve, venv/bin/narwhal-attest`,
        });
      }
      expect(steps.get("fleet-router-host-monitoring-files")).to.deep.include({
        op: "replace",
        keys: ["files"],
        observed: `the monitoring files on host ${big.alias} are gone: ${["prometheus.yml", "rules.yml", "engines.json", "router.json"].map((f) => `${prometheus}/${f}`).join(", ")}`,
      });
      for (const writer of ["prometheus-config", "targets", "freshness-expected", "grafana-files"]) {
        expect(steps.get(`fleet-router-host-monitoring-${writer}`), writer).to.deep.include({ op: "replace", keys: ["triggers"] });
      }
      for (const id of ["f1", "f2", "f3"]) {
        expect(steps.get(`fleet-${id}-liveness`), id).to.deep.include({ op: "replace", keys: ["serving"] });
        expect(steps.get(`fleet-${id}-process`), id).to.deep.include({ op: "replace", keys: ["triggers"] });
      }
      expect(steps.has("fleet-f4-process"), "f4 (another host) is not restarted as dead").to.equal(false);
      expect(steps.get("fleet-router-host-router-liveness")).to.deep.include({ op: "replace", keys: ["serving"] });
      expect(steps.get("fleet-router-host-router-process")?.op).to.equal("update");
      expect(steps.get("fleet-router-host-monitoring-prometheus-liveness")).to.deep.include({ op: "replace", keys: ["serving"] });
      expect(steps.get("fleet-router-host-monitoring-prometheus")).to.deep.include({ op: "replace", keys: ["triggers"] });
      expect(steps.get("fleet-router-host-monitoring-freshness-liveness")).to.deep.include({ op: "replace", keys: ["serving"] });
      expect(steps.get("fleet-router-host-monitoring-freshness")).to.deep.include({ op: "replace", keys: ["triggers"] });
      await expectOneUpConverges(steps, ENGINES);
    });
    const outputs = await stack.outputs();
    expect((await request(`${outputs.routerUrl.value as string}/health`).then((r) => r.body.json()))).to.deep.include({ status: "ok" });
    expect((await request(`http://${big.address}:9851/-/healthy`)).statusCode).to.equal(200);
    await expectNarwhalCheckAgrees(stack);
  });
});

/**
 * The drain the program runs on the router host before it replaces an engine's process
 * (lib/router/drain.ts), against the real narwhal-serve over three attested engine simulators (one
 * prefill, two decode) with the fleet's engine_contract, as Gate G runs it. Clients send completions
 * throughout: the drained engine leaves placement, its requests finish, and stopping it then fails none.
 * The refusals are outcomes, never errors: narwhal drains one engine at a time, an engine out of placement
 * is not drained again, and with no router (or none installed) there is nothing to drain.
 */
import { expect } from "chai";
import * as fs from "node:fs";
import * as path from "node:path";
import { sidecarStopScript } from "../../lib/attestation/sidecar";
import { drainScript, parseDrainOutcome, type DrainOutcome } from "../../lib/router/drain";
import { routerStartScript, routerStopScript, type RouterOptions } from "../../lib/router/serve";
import { ENGINE_API_KEY_ENV } from "../../lib/fleet/fleet-document";
import { envFile } from "../../lib/shell";
import { freePort, http, makeModel, removeTemps, ROOT, stopAll, tempDir } from "../unit/sim-engine/helpers";
import { shAsync } from "../support/sh-async";
import { API_KEY, checkedTransfer, fleetOf, type Attested } from "./support/contract-fleet";
import { shBounded as sh } from "../support/sh-async";

const BIN = path.join(ROOT, ".tools", "venv", "bin");
/** Model seconds (30 s of wall time at the fleet's time scale): blocks stay held until read. */
const KV_LEASE_S = 600;

/** One leg straight to an engine, as the router sends it: a prefill that hands its KV on, or the decode that reads it. */
async function leg(url: string, kvTransferParams: Record<string, unknown>): Promise<{ status: number; kv: Record<string, unknown> | null }> {
  const res = await fetch(`${url}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${API_KEY}` },
    body: JSON.stringify({ model: "tiny", prompt: "A narwhal is a whale with a tusk. ".repeat(4), max_tokens: 1, temperature: 0, kv_transfer_params: kvTransferParams }),
    signal: AbortSignal.timeout(30_000),
  });
  const body = (await res.json()) as { kv_transfer_params?: Record<string, unknown> | null };
  return { status: res.status, kv: body.kv_transfer_params ?? null };
}

describe("providers: an engine drained on the serving router before its process stops", function () {
  this.timeout(300_000);
  const attested: Attested[] = [];
  let router: RouterOptions;

  const engineOf = (id: string) => attested.find((a) => a.id === id)!.engine;
  const drain = async (engineId: string, o: Partial<{ python: string; backendPort: number }> = {}): Promise<DrainOutcome> => {
    const r = await sh(drainScript({ python: `${BIN}/python`, backendPort: router.backendPort, engineId, deadlineS: 30, engineUrl: engineOf(engineId).url, kvLeaseS: KV_LEASE_S, ...o }));
    expect(r.code, r.stderr).to.equal(0);
    return parseDrainOutcome(r.stdout);
  };
  const placement = async (): Promise<Record<string, { state: string; accepts_new: boolean }>> =>
    (JSON.parse((await http(`http://127.0.0.1:${router.backendPort}/narwhal/lifecycle`)).text) as { engines: Record<string, { state: string; accepts_new: boolean }> }).engines;

  before(async () => {
    const f = await fleetOf(checkedTransfer(makeModel()), attested, ["p0", "d0", "d1"], KV_LEASE_S);
    const doc = f.doc as typeof f.doc & { profiles: { path: string } };
    router = {
      runDir: path.join(tempDir("drain-router-"), "router"),
      binDir: BIN,
      bindAddress: "127.0.0.1",
      port: await freePort(),
      backendPort: await freePort(),
      // The store where the router's start writes it, inside its folder, as Gate F leaves it.
      fleetDocument: JSON.stringify({ ...doc, profiles: { ...doc.profiles, path: "runs/profiles.json" } }, null, 2),
      profileStore: fs.readFileSync(doc.profiles.path, "utf8"),
      startTimeoutS: 60,
      stopTimeoutS: 10,
    };
    const r = await shAsync(routerStartScript(router), envFile({ [ENGINE_API_KEY_ENV]: API_KEY }));
    expect(r.code, r.stderr).to.equal(0);
  });

  after(async () => {
    if (router) await sh(routerStopScript(router));
    for (const a of attested.splice(0)) await sh(sidecarStopScript(a.sidecar));
    await stopAll();
    removeTemps();
  });

  it("under narwhal's whole-wave policy (CUDA IPC peers), the router serves and refuses a one-engine drain, which the drain reports without holding up the restart", async () => {
    const wave: RouterOptions = {
      ...router,
      runDir: path.join(tempDir("drain-router-wave-"), "router"),
      port: await freePort(),
      backendPort: await freePort(),
      fleetDocument: JSON.stringify({ ...JSON.parse(router.fleetDocument), recovery: { engine_restart_policy: "whole_wave" } }, null, 2),
    };
    const started = await shAsync(routerStartScript(wave), envFile({ [ENGINE_API_KEY_ENV]: API_KEY }));
    expect(started.code, started.stderr).to.equal(0);
    try {
      const res = await fetch(`http://127.0.0.1:${wave.backendPort}/v1/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "tiny", prompt: "A narwhal is", max_tokens: 4, temperature: 0 }),
        signal: AbortSignal.timeout(60_000),
      });
      expect(res.status, await res.text()).to.equal(200);
      expect(JSON.parse((await http(`http://127.0.0.1:${wave.backendPort}/narwhal/lifecycle`)).text)).to.deep.include({ engine_restart_policy: "whole_wave" });
      const refused = await drain("d1", { backendPort: wave.backendPort });
      expect(refused).to.deep.equal({ drained: false, reason: "the serving router refused the drain (409): engine_restart_policy requires a whole-wave drain" });
    } finally {
      await sh(routerStopScript(wave));
    }
  });

  it("takes the engine out of placement once its requests finished; stopping it then fails no request, and a second drain waits its turn", async () => {
    expect(Object.values(await placement()).map((e) => e.accepts_new)).to.deep.equal([true, true, true]);
    const outcomes: Array<number | string> = [];
    let sending = true;
    const client = async () => {
      while (sending) {
        outcomes.push(
          await fetch(`http://127.0.0.1:${router.backendPort}/v1/completions`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ model: "tiny", prompt: "A narwhal is", max_tokens: 8, temperature: 0 }),
            signal: AbortSignal.timeout(60_000),
          }).then(
            async (res) => (await res.text(), res.status),
            (e: Error) => e.message,
          ),
        );
      }
    };
    const clients = [client(), client()];
    try {
      const d0 = attested.find((a) => a.id === "d0")!;
      // A prefill d0 answered whose KV blocks no decode has read yet: the router holds no request on d0,
      // so it calls d0 ready to stop, but a stop now would cut the read. The drain waits for it.
      const prefilled = await leg(d0.engine.url, { do_remote_decode: true, do_remote_prefill: false });
      expect(prefilled.status).to.equal(200);
      const draining = drain("d0");
      const deadline = Date.now() + 30_000;
      while ((await placement()).d0.state !== "drained" && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect((await placement()).d0).to.deep.include({ state: "drained", accepts_new: false });
      // Ready to stop for narwhal, and still not drained for the program while the blocks are held.
      const early = await Promise.race([draining.then(() => "returned"), new Promise((r) => setTimeout(() => r("waiting"), 1500))]);
      expect(early, "the drain returned while d0 still held KV blocks").to.equal("waiting");
      const read = await leg(engineOf("d1").url, prefilled.kv!);
      expect(read.status, "d1's read of d0's blocks").to.equal(200);
      const drained = await draining;
      expect(drained, JSON.stringify(drained)).to.deep.include({ drained: true });
      expect(drained.reason).to.equal("the serving router placed nothing new on d0 and its requests finished, and it holds no KV blocks");
      // The program's stop, as a replacement runs it: the engine (and its sidecar) go while clients send.
      await sh(sidecarStopScript(d0.sidecar));
      d0.engine.proc.kill("SIGKILL");
      const served = outcomes.length;
      const more = Date.now() + 30_000;
      while (outcomes.length < served + 20 && Date.now() < more) await new Promise((r) => setTimeout(r, 100));

      // narwhal holds one engine at a time: the next drain is refused until the router is swapped.
      const next = await drain("d1");
      expect(next.drained).to.equal(false);
      expect(next.reason).to.match(/^the serving router refused the drain \(409\): lifecycle action already active for d0/);
      expect((await placement()).d1.accepts_new).to.equal(true);
    } finally {
      sending = false;
      await Promise.all(clients);
    }
    const failed = outcomes.filter((o) => o !== 200);
    expect(outcomes.length).to.be.greaterThan(20);
    expect(failed, `of ${outcomes.length} requests`).to.deep.equal([]);
  });

  it("says why it drained nothing: an engine already out of placement, no router answering, no router installed", async () => {
    expect(await drain("d0")).to.deep.equal({ drained: false, reason: "the serving router already holds d0 out of placement (drained)" });
    const closed = await freePort();
    expect((await drain("d1", { backendPort: closed })).reason).to.match(new RegExp(`^no router answers on 127\\.0\\.0\\.1:${closed} \\(\\w+\\): nothing to drain$`));
    expect(await drain("d1", { python: "/nonexistent/venv/bin/python" })).to.deep.equal({
      drained: false,
      reason: "no router installed on this host (/nonexistent/venv/bin/python is missing): nothing to drain",
    });
  });
});

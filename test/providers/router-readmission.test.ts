/**
 * The router swap that ends an engine's restart (lib/router/serve.ts with lib/router/handoff.ts), against
 * the real narwhal-serve over three attested engine simulators (p0 prefill, d0 and d1 decode) with the
 * fleet's engine_contract. The serving router held the restarted engine out (drained, or ejected when it
 * died); the new router, started on the store that profiles the new process, takes over that hold from
 * the serving router's handoff and returns the engine through narwhal's own readmission, validated against
 * that store. Where narwhal could not readmit one engine at a time (a wave), the handoff is set aside and
 * every engine starts in placement; where narwhal refuses, the swap fails naming why and the others serve.
 */
import { expect } from "chai";
import * as fs from "node:fs";
import * as path from "node:path";
import { sidecarStopScript } from "../../lib/attestation/sidecar";
import { drainScript, parseDrainOutcome } from "../../lib/router/drain";
import { routerStartScript, routerStopScript, routerSwapScript, type RouterOptions, type RouterStarted } from "../../lib/router/serve";
import { withResume } from "../../lib/router/handoff";
import { ENGINE_API_KEY_ENV } from "../../lib/fleet/fleet-document";
import { storeDocument, type ProfileRow } from "../../lib/profiling/store";
import { lastJsonLine } from "../../lib/json-line";
import { envFile } from "../../lib/shell";
import { freePort, http, makeModel, removeTemps, ROOT, stopAll, tempDir } from "../unit/sim-engine/helpers";
import { simProfileRow } from "../unit/sim-engine/sim-fleet";
import { shAsync, shBounded as sh } from "../support/sh-async";
import { API_KEY, checkedTransfer, fleetOf, restartAttested, type Attested } from "./support/contract-fleet";

const BIN = path.join(ROOT, ".tools", "venv", "bin");

interface Placement {
  state: string;
  accepts_new: boolean;
  error: string;
  checks: string[];
}

describe("providers: a swapped router readmits, through narwhal's lifecycle, the engine the serving one held out", function () {
  this.timeout(300_000);
  const attested: Attested[] = [];
  const rows = new Map<string, ProfileRow>();
  let transfer: ReturnType<typeof checkedTransfer>;
  let base: Record<string, any>;
  let router: RouterOptions;

  const of = (id: string) => attested.find((a) => a.id === id)!;
  const placement = async (): Promise<Record<string, Placement>> =>
    (JSON.parse((await http(`http://127.0.0.1:${router.backendPort}/narwhal/lifecycle`)).text) as { engines: Record<string, Placement> }).engines;
  const accepting = async () => Object.fromEntries(Object.entries(await placement()).map(([id, e]) => [id, e.accepts_new]));

  /** The stack's document and store for the engines as they run now: what Gate F and the preflight leave the router. */
  const current = (stale: Partial<Record<string, ProfileRow>> = {}): Pick<RouterOptions, "fleetDocument" | "profileStore"> => ({
    fleetDocument: JSON.stringify(
      { ...base, engines: base.engines.map((e: Record<string, unknown>) => ({ ...e, attestation_url: of(e.iid as string).sidecar.endpoint.url })), recovery: withResume() },
      null,
      2,
    ),
    profileStore: JSON.stringify(storeDocument(attested.map((a) => stale[a.id] ?? rows.get(a.id)!), { package: "narwhal-fleet", writer: "router-readmission" })),
  });
  const profile = async (a: Attested) => {
    const r = await simProfileRow(a.id, a.engine);
    rows.set(a.id, { ...r, ttft_c: r.ttft_c + 0.05, generation_digest: a.bindingDigest });
  };
  const restart = async (id: string) => {
    const i = attested.findIndex((a) => a.id === id);
    attested[i] = await restartAttested(attested[i], transfer);
    await profile(attested[i]);
  };
  const drain = async (id: string) => {
    const r = await sh(drainScript({ python: `${BIN}/python`, backendPort: router.backendPort, engineId: id, deadlineS: 30, engineUrl: of(id).engine.url, kvLeaseS: 30 }));
    expect(parseDrainOutcome(r.stdout), r.stderr).to.deep.include({ drained: true });
  };
  const swap = async (o: Pick<RouterOptions, "fleetDocument" | "profileStore">) => {
    router = { ...router, ...o };
    const r = await shAsync(routerSwapScript(router), envFile({ [ENGINE_API_KEY_ENV]: API_KEY }));
    return { ...r, started: r.code === 0 ? lastJsonLine<RouterStarted>(r.stdout) : undefined };
  };
  /** A swap onto the engines as they run now that keeps the handoff for `reason` and readmits `readmitted` ([engine, how]), every engine in placement after. */
  const swapReadmitting = async (reason: string, readmitted: Array<[string, "readmit" | "recovery"]>) => {
    const r = await swap(current());
    expect(r.code, r.stderr).to.equal(0);
    expect(r.started!.handoff).to.deep.equal({ kept: true, reason });
    expect(r.started!.readmission!.readmitted.map((e) => [e.iid, e.by])).to.deep.equal(readmitted);
    expect(await accepting()).to.deep.equal({ d0: true, d1: true, p0: true });
    return r.started!.readmission!.readmitted;
  };
  const complete = async () => {
    const res = await fetch(`http://127.0.0.1:${router.backendPort}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "tiny", prompt: "A narwhal is", max_tokens: 4, temperature: 0 }),
      signal: AbortSignal.timeout(60_000),
    });
    return { status: res.status, text: await res.text() };
  };

  before(async () => {
    transfer = checkedTransfer(makeModel());
    const f = await fleetOf(transfer, attested, ["p0", "d0", "d1"]);
    base = { ...f.doc, profiles: { ...(f.doc as any).profiles, path: "runs/profiles.json" } };
    for (const r of f.rows) rows.set(r.iid, r);
    router = {
      runDir: path.join(tempDir("readmission-router-"), "router"),
      binDir: BIN,
      bindAddress: "127.0.0.1",
      port: await freePort(),
      backendPort: await freePort(),
      ...current(),
      startTimeoutS: 60,
      stopTimeoutS: 10,
    };
    const r = await shAsync(routerStartScript(router), envFile({ [ENGINE_API_KEY_ENV]: API_KEY }));
    expect(r.code, r.stderr).to.equal(0);
    expect(lastJsonLine<RouterStarted>(r.stdout)).to.deep.include({ handoff: { kept: false, reason: "the serving router left no handoff" }, readmission: { readmitted: [] } });
  });

  after(async () => {
    if (router) await sh(routerStopScript(router));
    for (const a of attested.splice(0)) await sh(sidecarStopScript(a.sidecar));
    await stopAll();
    removeTemps();
  });

  it("a drained engine, restarted and profiled again, returns through narwhal's readmit, validated against the new store", async () => {
    await drain("d0");
    await restart("d0");
    const [d0] = await swapReadmitting("holds d0 out for readmission (drained)", [["d0", "readmit"]]);
    // narwhal's own gates for the new process, the fabric leg with the serving prefill engine among them.
    expect(d0.checks).to.include.members(["new process identity", "profile generation", "fabric consume from p0", "final health"]);
    expect((await complete()).status).to.equal(200);
  });

  it("an engine that died, restarted, returns through narwhal's recovery probe, which the handoff made due at once", async () => {
    of("d1").engine.proc.kill("SIGKILL");
    await of("d1").engine.exited;
    const deadline = Date.now() + 60_000;
    // Requests through the router: the first attempt placed on d1 is refused, and narwhal holds it out.
    while ((await accepting()).d1 && Date.now() < deadline) expect((await complete()).status).to.equal(200);
    expect((await accepting()).d1, "the serving router held the dead d1 out").to.equal(false);
    await restart("d1");
    await swapReadmitting("holds d1 out for narwhal's recovery probe (ejected)", [["d1", "recovery"]]);
  });

  it("narwhal refuses an engine that fails its gates: the swap fails naming why, the others serve, and the next swap readmits it", async () => {
    await drain("d0");
    await restart("d0");
    // The new process answers its identity and attestation, but its /health says 503 (the simulator's control port).
    const dead = (value: boolean) => http(`${of("d0").engine.controlUrl}/dead`, { body: { dead: value } });
    await dead(true);
    const refused = await swap(current());
    expect(refused.code, refused.stderr).to.equal(1);
    expect(refused.stderr).to.contain("router: engine d0 stays out of placement while the other engines serve: narwhal refused its readmission (409): health did not answer 200");
    expect(refused.stderr).to.contain("Fix: see each engine's reason above and the router's /narwhal/lifecycle, then run pulumi up again");
    expect(await accepting()).to.deep.equal({ d0: false, d1: true, p0: true });
    expect((await complete()).status).to.equal(200);

    await dead(false);
    await swapReadmitting("holds d0 out for readmission (drained)", [["d0", "readmit"]]);
  });

  it("sets aside a handoff narwhal could not readmit one engine at a time (a wave): the new router starts with every engine in placement", async () => {
    await drain("d0");
    await restart("d0");
    await restart("p0");
    const r = await swap(current());
    expect(r.code, r.stderr).to.equal(0);
    // The serving router saw p0's new process (another process than it verified) or held it out (then no
    // prefill engine would stay to validate d0 against): either way, no engine-at-a-time readmission.
    expect(r.started!.handoff!.kept).to.equal(false);
    expect(r.started!.handoff!.reason).to.match(/^(p0 runs another process than the serving router verified \(it restarted undrained: a wave\)|no prefill engine would stay in placement to validate d0, p0 against); set it aside, every engine starts in placement$/);
    expect(fs.existsSync(path.join(router.runDir, "runs", "state.json.discarded"))).to.equal(true);
    expect(r.started!.readmission!.readmitted).to.deep.equal([]);
    expect(await accepting()).to.deep.equal({ d0: true, d1: true, p0: true });
    expect((await complete()).status).to.equal(200);
  });
});

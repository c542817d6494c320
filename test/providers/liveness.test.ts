/**
 * Liveness against real engine simulator processes on 127.0.0.1, its methods called as the dynamic
 * provider host calls them: a serving engine keeps its epoch; a dead, hung or vanished one is replaced
 * (replace key "serving", the probe's words as the reason), and the replacement's new epoch is what
 * restarts the engine's process.
 */
import { expect } from "chai";
import { provider } from "../../dynamic-providers/liveness/provider";
import type { LivenessInputs, LivenessOutputs } from "../../dynamic-providers/liveness/check";
import { UNKNOWN } from "../../lib/unknown";
import { http, makeModel, removeTemps, startEngine, stopAll, type SimEngine } from "../unit/sim-engine/helpers";

const ARGS = ["--served-model-name", "tiny", "--max-model-len", "4096"];
/** Short enough to keep the hung case quick, far above a loopback /health on a loaded machine. */
const HEALTH_DEADLINE_S = 3;

const inputsFor = (engine: SimEngine): LivenessInputs => ({ service: "engine", name: "e1", hostAlias: "local", url: engine.url, healthDeadlineS: HEALTH_DEADLINE_S });

async function created(engine: SimEngine): Promise<LivenessOutputs> {
  return (await provider.create(inputsFor(engine))).outs as LivenessOutputs;
}

async function refreshed(outs: LivenessOutputs): Promise<LivenessOutputs> {
  return (await provider.read!("id", outs)).props as LivenessOutputs;
}

describe("providers: Liveness against the engine simulator", function () {
  this.timeout(120_000);
  let model: string;

  before(() => (model = makeModel()));
  afterEach(stopAll);
  after(removeTemps);

  it("mints a new epoch at each create and probes nothing then", async () => {
    const engine = await startEngine({ model, args: ARGS });
    const [a, b] = [await created(engine), await created(engine)];
    expect(a.epoch).to.match(/^[0-9a-f]{16}$/).and.not.equal(b.epoch);
    expect(a.observedState).to.equal(undefined);
  });

  it("leaves a serving engine alone: a refresh sees it serving and the diff plans nothing", async () => {
    const engine = await startEngine({ model, args: ARGS });
    const seen = await refreshed(await created(engine));
    expect(seen).to.include({ observedState: "serving" });
    expect(await provider.diff!("id", seen, inputsFor(engine))).to.deep.include({ changes: false, replaces: [] });
  });

  it("replaces the record of an engine whose process is gone, naming the refused connection", async () => {
    const engine = await startEngine({ model, args: ARGS });
    const outs = await created(engine);
    await engine.stop();
    const seen = await refreshed(outs);
    expect(seen.observedState).to.equal("down");
    expect(seen.observedDetail).to.equal(`${engine.url}/health: connection refused (ECONNREFUSED) (the engine process is gone)`);
    expect(await provider.diff!("id", seen, inputsFor(engine))).to.deep.include({ changes: true, replaces: ["serving"] });
  });

  it("calls an engine that answers no /health within the deadline hung, and does not wait past it", async () => {
    const engine = await startEngine({ model, args: ARGS });
    const outs = await created(engine);
    engine.proc.kill("SIGSTOP");
    try {
      const t0 = Date.now();
      const seen = await refreshed(outs);
      expect(Date.now() - t0).to.be.below((HEALTH_DEADLINE_S + 10) * 1000);
      expect(seen.observedState).to.equal("down");
      expect(seen.observedDetail).to.equal(`${engine.url}/health: no answer within ${HEALTH_DEADLINE_S} s (the engine hangs)`);
    } finally {
      engine.proc.kill("SIGCONT");
    }
  });

  it("calls an engine that reports itself dead down (HTTP 503), and one serving again after a restart serving", async () => {
    const engine = await startEngine({ model, args: ARGS });
    const outs = await created(engine);
    await http(`${engine.controlUrl}/dead`, { body: { dead: true } });
    const seen = await refreshed(outs);
    expect(seen).to.include({ observedState: "down", observedDetail: `${engine.url}/health answered HTTP 503 (the engine reports itself dead)` });
    // The replacement's create mints the epoch that restarts the process; its next refresh finds it serving.
    await http(`${engine.controlUrl}/dead`, { body: { dead: false } });
    const again = await refreshed((await provider.create(inputsFor(engine))).outs as LivenessOutputs);
    expect(again.observedState).to.equal("serving");
    expect(again.epoch).to.not.equal(outs.epoch);
  });
});

describe("providers: Liveness's diff", () => {
  const outs: LivenessOutputs = { service: "engine", name: "e1", hostAlias: "sim1", url: "http://198.18.0.11:8101", healthDeadlineS: 15, epoch: "ab", observedState: "serving", observedDetail: "ok" };

  it("keeps the epoch of a record made when only engines had one (EngineLiveness): an update, no restart", async () => {
    const { service: _s, name: _n, ...rest } = outs;
    const older = { ...rest, engineId: "e1" } as unknown as LivenessOutputs;
    expect(await provider.diff!("id", older, { service: "engine", name: "e1", hostAlias: "sim1", url: outs.url, healthDeadlineS: 15 })).to.deep.include({ changes: true, replaces: [] });
    expect((await provider.update!("id", older, { service: "engine", name: "e1", hostAlias: "sim1", url: outs.url, healthDeadlineS: 15 })).outs).to.include({ epoch: "ab", service: "engine" });
  });

  it("updates in place when the endpoint moves, and forecasts nothing for a value a preview does not know yet", async () => {
    expect(await provider.diff!("id", outs, { ...outs, url: "http://198.18.0.11:8102" })).to.deep.include({ changes: true, replaces: [] });
    expect(await provider.diff!("id", outs, { ...outs, url: UNKNOWN })).to.deep.include({ changes: false, replaces: [] });
  });
});

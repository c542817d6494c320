/**
 * A fabric edge proves its reservation from the counters of the engines on its two hosts, read through its
 * own SSH sessions around the measurement: a native engine on sim6 (the source host), started by the
 * program's own start script and bound to its fabric address, is idle in one run and serving a client's
 * completions throughout another. An engine whose `/metrics` cannot be read leaves the edge unproved,
 * never unmeasured.
 */
import { expect } from "chai";
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { provider } from "../../dynamic-providers/fabric-edge/provider";
import type { FabricEdgeInputs, FabricEdgeOutputs } from "../../dynamic-providers/fabric-edge/schema";
import { evidenceRoot } from "../../lib/evidence/store";
import type { EdgeReservation } from "../../lib/fabric/edge-reservation";
import { renderLaunchPlan, type LaunchPlan } from "../../lib/launch/plan";
import { startScript, stopScript } from "../../lib/runtime/native";
import { envFile } from "../../lib/shell";
import { simDown, simUp, type SimHost } from "../../sim/hosts";
import { edgeBetween } from "./support/fabric-edge";
import { onHost, simLaunch } from "./support/sim-launch";

const STACK = "provider-fabric-reservation";
const API_KEY = "sk-narwhal-fabric-reservation-7c41";
const IPERF_PORT = 5293;
/** Where nothing listens on sim7: an engine listed there cannot be read. */
const NOBODY_PORT = 8399;

let hosts: Map<string, SimHost>;
let plan: LaunchPlan;
let runDir: string;
const runtime = () => ({ runDir, healthTimeoutS: 90, stopTimeoutS: 10 });


function inputs(extra: Partial<FabricEdgeInputs> = {}): FabricEdgeInputs {
  return {
    ...edgeBetween(hosts.get("sim6")!, hosts.get("sim7")!, STACK),
    transport: "tcp",
    tool: { durationS: 2, streams: 1 },
    iperfPort: IPERF_PORT,
    requiredGbps: 1,
    engines: [{ engineId: plan.engineId, side: "source", url: plan.url }],
    ...extra,
  };
}

async function create(i: FabricEdgeInputs): Promise<{ outs: FabricEdgeOutputs; reservation: EdgeReservation }> {
  const outs = (await provider.create(i)).outs as FabricEdgeOutputs;
  const record = JSON.parse(fs.readFileSync(path.join(evidenceRoot(process.cwd(), STACK), outs.evidence.relativePath), "utf8")) as { observations: { reservation: EdgeReservation } };
  return { outs, reservation: record.observations.reservation };
}

/** A client sending completions to the engine, `workers` at a time, until stopped; resolves with how many were answered. */
function client(url: string, workers: number): { answered: () => number; stop: () => Promise<number> } {
  let running = true;
  let answered = 0;
  const one = async () => {
    while (running) {
      const res = await fetch(`${url}/v1/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${API_KEY}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "tiny-llama", prompt: "the fabric carries KV between engines", max_tokens: 16 }),
        signal: AbortSignal.timeout(30_000),
      });
      await res.text();
      if (res.status !== 200) throw new Error(`completion answered HTTP ${res.status}`);
      answered++;
    }
  };
  const loops = Array.from({ length: workers }, one);
  return {
    answered: () => answered,
    stop: async () => {
      running = false;
      await Promise.all(loops);
      return answered;
    },
  };
}

describe("providers: a fabric edge proves its reservation from its hosts' engines' counters", function () {
  this.timeout(240_000);

  before(async () => {
    const fleet = await simUp({ hosts: 7, aliases: ["sim6", "sim7"] });
    hosts = new Map(fleet.hosts.map((h) => [h.alias, h]));
    const h = hosts.get("sim6")!;
    const id = `fr-${randomBytes(3).toString("hex")}`;
    plan = renderLaunchPlan(simLaunch(h, { id, port: 8396, nixlPort: 5796, gpuIds: [0] }, { policy: { engineEnv: { NARWHAL_SIM_TIME_SCALE: "0.05" } } }));
    runDir = `/srv/${STACK}/${id}`;
    const started = await onHost(h, startScript(plan, runtime()), envFile({ VLLM_API_KEY: API_KEY }));
    expect(started.code, started.stderr).to.equal(0);
  });

  after(async () => {
    if (plan) await onHost(hosts.get("sim6")!, `${stopScript(plan, runtime())}\nrm -rf /srv/${STACK}`);
    await simDown({ aliases: ["sim6", "sim7"] });
  });

  it("is idle when the engine on the source host served nothing during the measurement", async () => {
    expect(plan.url).to.equal(`http://${hosts.get("sim6")!.address}:8396`);
    const { outs, reservation } = await create(inputs());
    expect(outs.verdict).to.equal("met");
    expect(outs.reservation).to.deep.equal({ idle: true, reasons: [], foreign: { [plan.engineId]: 0 } });
    expect(reservation.idle).to.equal(true);
    expect(reservation.watched).to.deep.equal([{ engineId: plan.engineId, side: "source", url: plan.url }]);
    expect(reservation.engines).to.have.length(1);
    expect(reservation.engines[0]).to.include({ engine: plan.engineId, own: 0, foreign: 0, restarted: false });
    expect(reservation.engines[0].before.processStart).to.be.a("number");
  });

  it("is not idle, with the foreign count in the record, when a client's completions reach the engine during the measurement", async () => {
    const load = client(plan.url, 2);
    let answered: number;
    let result: Awaited<ReturnType<typeof create>>;
    try {
      // The client is under way before the edge reads the engine's counters.
      const t0 = Date.now();
      while (load.answered() < 2 && Date.now() - t0 < 30_000) await new Promise((r) => setTimeout(r, 50));
      result = await create(inputs());
    } finally {
      answered = await load.stop();
    }
    const { outs, reservation } = result;
    expect(answered).to.be.greaterThan(2);
    // The figure stands: the reservation is recorded beside it, not instead of it.
    expect(outs.measurement.gbps).to.be.greaterThan(1);
    expect(outs.reservation!.idle).to.equal(false);
    expect(outs.reservation!.foreign[plan.engineId]).to.be.greaterThan(0);
    expect(reservation.idle).to.equal(false);
    const w = reservation.engines[0];
    expect(w).to.include({ engine: plan.engineId, own: 0, restarted: false });
    expect(w.foreign).to.be.greaterThan(0).and.at.most(answered);
    expect(w.after.finished).to.be.greaterThan(w.before.finished);
    expect(reservation.reasons).to.have.length(1);
    expect(reservation.reasons[0]).to.match(new RegExp(`^engine ${plan.engineId} served ${w.foreign} requests? besides the probe's 0`));
  });

  it("records an engine whose /metrics cannot be read as not proved idle, and still measures", async () => {
    const gone = { engineId: "e-gone", side: "destination" as const, url: `http://${hosts.get("sim7")!.address}:${NOBODY_PORT}` };
    const { outs, reservation } = await create(inputs({ engines: [{ engineId: plan.engineId, side: "source", url: plan.url }, gone] }));
    expect(outs.verdict).to.equal("met");
    expect(outs.reservation!.idle).to.equal(false);
    expect(outs.reservation!.foreign).to.deep.equal({ [plan.engineId]: 0, "e-gone": null });
    expect(reservation.unread.map((u) => [u.engine, u.side, u.problems.length])).to.deep.equal([["e-gone", "destination", 1]]);
    expect(reservation.reasons).to.have.length(1);
    expect(reservation.reasons[0]).to.match(new RegExp(`^engine e-gone on the destination host \\(${gone.url.replace(/\./g, "\\.")}\\): its /metrics could not be read before or after the measurement \\(host sim7: .*${NOBODY_PORT}.*Connection refused.*\\): its counters cannot say what else it served, so it is not proved idle$`));
  });
});

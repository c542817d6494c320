import { expect } from "chai";
import * as fs from "node:fs";
import * as path from "node:path";
import type { Stack } from "@pulumi/pulumi/automation";
import { runInHost } from "../../sim/hosts";
import { PROJECT_ROOT, sharedFleet, setObjectConfig } from "./support/stack";
import { expectNothingPlanned, plannedChanges, type PlannedStep } from "./support/preview";
import { plannedRemeasure, remeasuredSince, snapshotEvidence } from "./support/remeasured";

interface EdgeOut {
  gbps: number;
  requiredGbps: number;
  verdict: string;
  evidence: { relativePath: string; digest: string };
}
interface FabricOut {
  matrix: { hosts: string[]; cells: Record<string, Record<string, { gbps: number; requiredGbps: number; verdict: string } | null>> };
  evidence: { relativePath: string; digest: string };
  edges: Record<string, EdgeOut>;
}

/** The shared fleet's hosts carry e1+e4, e2 and e3, none pinned: every ordered pair is an edge. */
const ORDER = ["sim1->sim2", "sim1->sim4", "sim2->sim1", "sim2->sim4", "sim4->sim1", "sim4->sim2"];
const resourceName = (edge: string) => `fleet-fabric-${edge.replace("->", "-to-")}`;

/** Each edge's evidence digest as the state holds it: a re-measured edge has a new one. */
async function edgeEvidence(stack: Stack): Promise<Record<string, string>> {
  const resources = (await stack.exportStack()).deployment.resources as Array<{ urn: string; outputs?: { evidence?: { digest: string } } }>;
  return Object.fromEntries(ORDER.map((id) => [id, resources.find((r) => r.urn.endsWith(`::${resourceName(id)}`))!.outputs!.evidence!.digest]));
}

function record(relativePath: string): Record<string, any> {
  return JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, "runs", "e2e", "evidence", relativePath), "utf8"));
}

/**
 * Runs `up` and holds the evidence it wrote to the plan: a record for each replaced resource that keeps
 * one, plus the gate's judgement of the edges it was given (an update that writes a record, measuring
 * nothing); then a refreshing preview finds nothing left to do.
 */
async function expectUpMeasuresAsPlanned(stack: Stack, steps: Map<string, PlannedStep>): Promise<void> {
  const snapshot = await snapshotEvidence(stack);
  await stack.up({ refresh: true, onOutput: () => undefined });
  expect(await remeasuredSince(snapshot)).to.deep.equal([...plannedRemeasure(steps, snapshot), "fleet-fabric-gate"].sort());
  await expectNothingPlanned(stack, { refresh: true });
}

describe("e2e: fabric edges (Gate D)", function () {
  this.timeout(1_200_000);

  it("measures every directed edge once, one at a time after the engines, and reports the edge matrix", async () => {
    const { stack } = await sharedFleet();
    const fabric = (await stack.outputs()).fabric.value as FabricOut;
    expect(Object.keys(fabric.edges)).to.have.members(ORDER);
    expect(fabric.matrix.hosts).to.deep.equal(["sim1", "sim2", "sim4"]);
    for (const h of fabric.matrix.hosts) expect(fabric.matrix.cells[h][h]).to.equal(null);
    for (const id of ORDER) {
      const [s, d] = id.split("->") as [string, string];
      expect(fabric.matrix.cells[s][d]).to.deep.include({ verdict: "met", gbps: fabric.edges[id].gbps });
      expect(fabric.edges[id].gbps).to.be.greaterThan(fabric.edges[id].requiredGbps);
    }
    expect(record(fabric.evidence.relativePath)).to.deep.include({ kind: "fabric-matrix", verdict: { status: "pass", reasons: [] } });

    // Serialised: no two edges' measurements overlap, from their own recorded start and end times.
    const windows = ORDER.map((id) => record(fabric.edges[id].evidence.relativePath)).map((r) => ({ id: r.subject.alias as string, start: Date.parse(r.startedAt), end: Date.parse(r.endedAt) }));
    windows.sort((a, b) => a.start - b.start);
    for (let k = 1; k < windows.length; k++) expect(windows[k].start, `${windows[k].id} after ${windows[k - 1].id}`).to.be.at.least(windows[k - 1].end);

    // Ordered in the state: the first edge waits for every engine (and so its cache capture), each next edge for the one before.
    const resources = (await stack.exportStack()).deployment.resources as Array<{ urn: string; type: string; dependencies?: string[] }>;
    const urn = (name: string) => resources.find((r) => r.urn.endsWith(`::${name}`))!.urn;
    const dependencies = (name: string) => resources.find((r) => r.urn.endsWith(`::${name}`))!.dependencies ?? [];
    // A dependency on a component is recorded as one on each of its resources: every engine's cache capture.
    expect(dependencies(resourceName(ORDER[0]))).to.include.members(["fleet-e1-cache", "fleet-e2-cache", "fleet-e3-cache", "fleet-e4-cache"].map(urn));
    for (let k = 1; k < ORDER.length; k++) expect(dependencies(resourceName(ORDER[k]))).to.include(urn(resourceName(ORDER[k - 1])));
  });

  it("replaces exactly the edges touching a host whose fabric route changed, in a real preview, and up measures only those", async () => {
    const { stack, hosts } = await sharedFleet();
    const c = hosts.find((h) => h.alias === "sim4")!;
    const touched = [...["sim1->sim4", "sim2->sim4", "sim4->sim1", "sim4->sim2"].map(resourceName), "fleet-fabric-gate", "fleet-preflight"].sort();
    const subnet = "198.18.0.0/24";
    const base = `${subnet} dev ${c.fabricInterface} proto kernel scope link src ${c.address}`;
    await runInHost(c.alias, `ip route replace ${base} mtu 1400`);
    try {
      const steps = await plannedChanges(stack, { refresh: true });
      // From sim4 the payload takes the changed route; into sim4 its acknowledgements do.
      expect(steps.get(resourceName("sim4->sim1"))).to.deep.include({ op: "replace", keys: ["forwardPath"] });
      expect(steps.get(resourceName("sim4->sim2"))).to.deep.include({ op: "replace", keys: ["forwardPath"] });
      expect(steps.get(resourceName("sim1->sim4"))).to.deep.include({ op: "replace", keys: ["returnPath"] });
      expect(steps.get(resourceName("sim2->sim4"))).to.deep.include({ op: "replace", keys: ["returnPath"] });
      expect(steps.get("fleet-fabric-gate")?.op).to.equal("update");
      // Design row: the preflight's consume probes crossed those edges. The router keeps serving: its
      // document and store are the same, and it waits on the new preflight only when it starts again.
      expect(steps.get("fleet-preflight")).to.deep.include({ op: "replace", keys: ["fabricEdges"] });
      expect([...steps.keys()].sort()).to.deep.equal(touched);
      await expectUpMeasuresAsPlanned(stack, steps);
    } finally {
      await runInHost(c.alias, `ip route replace ${base}`);
    }
    // The route as it was is a change again: the same edges and the preflight are measured once more.
    const back = await plannedChanges(stack, { refresh: true });
    expect([...back.keys()].sort()).to.deep.equal(touched);
    await expectUpMeasuresAsPlanned(stack, back);
  });

  it("plans no measurement when the offered handoff rate moves: only the edges' verdicts are re-judged", async () => {
    const { stack } = await sharedFleet();
    await setObjectConfig(stack, "fabric", { handoffRate: 2 });
    try {
      const steps = await plannedChanges(stack);
      // The rate sizes the budget each edge is judged against; no engine, profile or preflight was measured against it.
      expect([...steps.keys()].sort()).to.deep.equal([...ORDER.map(resourceName), "fleet-fabric-gate"].sort());
      for (const step of steps.values()) expect(step.op, step.name).to.equal("update");
    } finally {
      await stack.removeConfig("narwhal-fleet:fabric");
    }
    await expectNothingPlanned(stack);
  });

  it("re-judges every edge for a budget change and re-measures none; a budget they cannot meet fails up with the diagnosis", async () => {
    const { stack } = await sharedFleet();
    const before = (await stack.outputs()).fabric.value as FabricOut;
    const measured = await edgeEvidence(stack);
    try {
      await setObjectConfig(stack, "fabric", { headroom: 2.5 });
      const steps = await plannedChanges(stack);
      expect([...steps.keys()].sort()).to.deep.equal([...ORDER.map(resourceName), "fleet-fabric-gate"].sort());
      for (const step of steps.values()) expect(step.op, step.name).to.equal("update");

      // Nothing is replaced, so nothing is measured; the gate's update writes its new judgement as a record.
      const snapshot = await snapshotEvidence(stack);
      await stack.up({ onOutput: () => undefined });
      expect(plannedRemeasure(steps, snapshot)).to.deep.equal([]);
      expect(await remeasuredSince(snapshot)).to.deep.equal(["fleet-fabric-gate"]);
      expect(await edgeEvidence(stack)).to.deep.equal(measured);
      const after = (await stack.outputs()).fabric.value as FabricOut;
      for (const id of ORDER) expect(after.edges[id].requiredGbps).to.be.closeTo(before.edges[id].requiredGbps * 2, 1e-12);

      // 1000× the first-trial headroom asks 335.5 Gbit/s of a veth: the gate stops `up` and names every edge.
      await setObjectConfig(stack, "fabric", { headroom: 1250 });
      let failure = "";
      const blocked = await snapshotEvidence(stack);
      await stack.up({ onOutput: () => undefined }).catch((err: Error) => (failure = err.message));
      // A blocked gate still keeps its judgement; no edge was sampled again.
      expect(await remeasuredSince(blocked)).to.deep.equal(["fleet-fabric-gate"]);
      expect(failure).to.include("Gate D: 6 of 6 fabric edge(s) do not meet their budget:");
      for (const id of ORDER) expect(failure).to.match(new RegExp(`edge ${id}: measured [0-9.]+ Gbit/s, (\\d+ retransmits, )?below its budget of 335\\.5 Gbit/s`));
      expect(failure).to.include("Diagnose route, binding, listener, firewall, HCA/GID, MTU, retransmissions or RDMA counters, CPU saturation, concurrent traffic.");
      expect(await edgeEvidence(stack)).to.deep.equal(measured);
    } finally {
      await stack.removeConfig("narwhal-fleet:fabric");
      await stack.up({ onOutput: () => undefined });
    }
    expect(await edgeEvidence(stack)).to.deep.equal(measured);
    const restored = (await stack.outputs()).fabric.value as FabricOut;
    for (const id of ORDER) expect(restored.edges[id].verdict).to.equal("met");
    await expectNothingPlanned(stack);
  });
});

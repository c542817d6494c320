/**
 * e2e: a fleet that mixes TCP and RDMA engines, on two hosts of its own with simulated HCAs (sim40 and
 * sim41, mlx5_0 each), through the real CLI. Pins keep KV between hosts on one transport: sim40 runs a
 * TCP prefill and an RDMA decode, sim41 an RDMA prefill and a TCP decode, so sim40->sim41 is a TCP edge
 * measured with iperf3 and sim41->sim40 an RDMA edge measured with ib_write_bw, each against its own
 * cache group's budget (issue 30, item 3).
 */
import { expect } from "chai";
import * as fs from "node:fs";
import * as path from "node:path";
import type { Stack } from "@pulumi/pulumi/automation";
import { setRdmaPortState, simUp } from "../../sim/hosts";
import type { SimHost } from "../../sim/hosts";
import { E2E_TIME_SCALE, openStack, PROJECT_ROOT, type EngineEntry } from "./support/stack";
import { expectNothingPlanned, plannedChanges } from "./support/preview";

const STACK = "e2e-rdma";
const quiet = { onOutput: () => undefined };
const HOSTS = ["sim40", "sim41"];

interface EdgeOut {
  gbps: number;
  requiredGbps: number;
  verdict: string;
  retransmits: number | null;
  evidence: { relativePath: string; digest: string };
}

const record = (relativePath: string): Record<string, any> => JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, "runs", STACK, "evidence", relativePath), "utf8"));

describe("e2e: a mixed TCP and RDMA fleet (Gate A's HCAs, Gate D's RDMA edge)", function () {
  this.timeout(1_800_000);
  let stack: Stack;

  before(async () => {
    const all = (await simUp({ hosts: 41, aliases: HOSTS, rdma: { sim40: ["mlx5_0"], sim41: ["mlx5_0"] }, timeScale: E2E_TIME_SCALE })).hosts;
    const [a, b] = HOSTS.map((alias) => all.find((h) => h.alias === alias)!) as [SimHost, SimHost];
    const rdma = (gidIndex?: number) => ({ transport: "ucx_rdma", rdma: { hcas: ["mlx5_0:1"], ...(gidIndex === undefined ? {} : { gidIndex }) } });
    const engines = [
      { id: "r1", host: a.alias, gpuIds: [0], port: 8971, attestationPort: 8981, nixlPort: 6071, role: "prefill", pin: true },
      { id: "r2", host: a.alias, gpuIds: [1], port: 8972, attestationPort: 8982, nixlPort: 6072, role: "decode", pin: true, overrides: rdma(3) },
      { id: "r3", host: b.alias, gpuIds: [0], port: 8973, attestationPort: 8983, nixlPort: 6073, role: "prefill", pin: true, overrides: rdma() },
      { id: "r4", host: b.alias, gpuIds: [1], port: 8974, attestationPort: 8984, nixlPort: 6074, role: "decode", pin: true },
    ] as unknown as EngineEntry[];
    stack = await openStack(STACK, [a, b], engines, { router: { port: 8961 }, observability: { prometheusPort: 9961, freshnessPort: 9962 } });
    await stack.destroy(quiet);
    await stack.up(quiet);
  });

  after(async () => {
    setRdmaPortState("sim41", "active");
    await stack?.destroy(quiet);
  });

  it("measures the TCP edge with iperf3 and the RDMA edge with ib_write_bw, each against its own group's budget", async () => {
    const fabric = (await stack.outputs()).fabric.value as { edges: Record<string, EdgeOut> };
    expect(Object.keys(fabric.edges).sort()).to.deep.equal(["sim40->sim41", "sim41->sim40"]);
    for (const e of Object.values(fabric.edges)) expect(e.verdict).to.equal("met");

    const tcp = record(fabric.edges["sim40->sim41"].evidence.relativePath);
    expect(tcp.inputs.transport).to.equal("tcp");
    expect(tcp.observations.tool.client[0]).to.equal("iperf3");

    const rdma = record(fabric.edges["sim41->sim40"].evidence.relativePath);
    expect(rdma.inputs.transport).to.equal("ucx_rdma");
    expect(rdma.inputs.rdma).to.deep.equal({ source: { hca: "mlx5_0", port: 1, gidIndex: null }, destination: { hca: "mlx5_0", port: 1, gidIndex: 3 } });
    expect(rdma.observations.tool.client.slice(0, 7)).to.deep.equal(["ib_write_bw", "-d", "mlx5_0", "-i", "1", "-x", "3"]);
    expect(rdma.observations.counters.sourceXmitBytes).to.be.at.least(65536 * 5000);
    expect(rdma.observations.counters.destinationRcvBytes).to.be.at.least(65536 * 5000);
    expect(fabric.edges["sim41->sim40"].retransmits).to.equal(rdma.observations.counters.retransmits);
    // Two cache groups (the transport is part of the signature), each edge held to its own producer's.
    expect(tcp.inputs.budget.governingEngine).to.equal("r1");
    expect(rdma.inputs.budget.governingEngine).to.equal("r3");

    // Discovery recorded both hosts' HCAs; the RDMA engine's plan tells UCX its HCA and GID.
    const resources = (await stack.exportStack()).deployment.resources as Array<{ urn: string; outputs?: Record<string, any> }>;
    const out = (name: string) => resources.find((r) => r.urn.endsWith(`::${name}`))!.outputs!;
    expect(out("fleet-sim41").rdma.devices[0].ports[0]).to.deep.include({ hca: "mlx5_0", port: 1, state: "4: ACTIVE", linkLayer: "Ethernet" });
    expect(out("fleet-sim40").rdmaPorts).to.deep.equal([{ hca: "mlx5_0", port: 1, gidIndex: 3 }]);
  });

  it("replaces exactly the RDMA edge whose source port went down, refuses to measure it naming host, HCA and port, and converges once it is back", async () => {
    await expectNothingPlanned(stack, { refresh: true });
    setRdmaPortState("sim41", "down");
    const steps = await plannedChanges(stack, { refresh: true });
    expect(steps.get("fleet-fabric-sim41-to-sim40")).to.deep.include({ op: "replace", keys: ["forwardPath", "returnPath"] });
    expect(steps.has("fleet-fabric-sim40-to-sim41"), "the TCP edge").to.equal(false);
    expect(steps.has("fleet-sim41"), "the host's discovery").to.equal(false);
    let refusal = "";
    await stack.up({ refresh: true, ...quiet }).catch((err: Error) => (refusal = err.message));
    expect(refusal).to.include("edge sim41->sim40: host sim41: HCA mlx5_0 port 1 is 1: DOWN (phys_state 3: Disabled), not 4: ACTIVE");
    setRdmaPortState("sim41", "active");
    await stack.up({ refresh: true, ...quiet });
    await expectNothingPlanned(stack, { refresh: true });
  });
});

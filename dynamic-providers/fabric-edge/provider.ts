/**
 * FabricEdge provider methods (Gate D), loaded at call time by resource.ts (see ../shim.ts).
 *
 * - create: one directed measurement (./measure.ts), holding the measurement lock (./lock.ts): observe both hosts'
 *   sides of the path (MTU, address, `ip route get`, route files), refuse a path that is not the fabric,
 *   check that nothing else uses iperf3 or the port, start the server on the destination, run the client
 *   on the source, stop the server whatever happened, and record everything as evidence. A `ucx_rdma`
 *   edge does the same with ib_write_bw between its HCA ports (./create-rdma.ts), refusing a port that is
 *   not ACTIVE or lacks its GID index first and reading the port counters around the test. The verdict
 *   against the budget is computed, and kept: "below" is reported by the fleet's fabric gate, so the
 *   figure stays on record and a budget change re-evaluates it without re-measuring.
 * - diff: what the measurement was taken against replaces; the budget, logins and port update.
 * - update: recomputes the verdict from the stored measurement; nothing is measured.
 * - read: observes both sides again without traffic, recorded as `observed` beside `measured`, so
 *   `pulumi preview --refresh` replaces exactly the edges whose path moved.
 * - delete: nothing remote; the evidence record stays.
 */
import type * as pulumi from "@pulumi/pulumi";
import { FabricError } from "../../lib/fabric/errors";
import { iperf3Commands, iperf3Measurement, parseIperf3Json, type Iperf3Commands, type Iperf3Result } from "../../lib/fabric/iperf3";
import { hasUnknown } from "../diff";
import { evidenceProvider } from "../evidence-provider";
import { edgeInputProblems, edgeInputs } from "./check";
import { withMeasurementLock } from "./lock";
import { digestsOf, measure, observe, withSessions, type Run } from "./measure";
import { createRdmaEdge } from "./create-rdma";
import { createdEdge, fingerprintsOf, recordEdge, refuseRecorded, verdictFields } from "./outcome";
import type { EdgeEndpoint, EdgeMeasurement, FabricEdgeInputs, FabricEdgeOutputs, PathDigests, TcpTool } from "./types";
import { withHostKeyOf } from "../../lib/ssh/host-key";

/** What the figure was taken against: a change means the figure no longer describes the path. */
const MEASURED_AGAINST = ["edgeId", "source", "destination", "transport", "rdma", "tool"] as const;
/** What only changes how the hosts are reached or what the figure is compared with. */
const UPDATABLE = [
  "stack", "iperfPort", "rdmaPort", "sourceLogin", "destinationLogin", "sourcePrivateKey", "sourcePassword",
  "destinationPrivateKey", "destinationPassword", "requiredGbps", "budget", "lockWaitS",
] as const;

function refuseBadInputs(i: FabricEdgeInputs): void {
  const problems = edgeInputProblems(i);
  if (problems.length) {
    throw new FabricError("NARWHAL_FABRIC_TOOL_SETTINGS", `edge ${i.edgeId}: ${problems.map(([, p]) => p).join("; ")}; nothing was run`);
  }
}

/** The edge's evidence record: what it was measured against, every step, the route files, every sample. */
async function record(
  i: FabricEdgeInputs,
  run: Run,
  commands: Iperf3Commands,
  parsed: { result: Iperf3Result; measurement: EdgeMeasurement } | null,
  verdict: { status: "pass" | "fail" | "invalid"; reasons: string[] },
): Promise<{ relativePath: string; digest: string }> {
  const r = parsed?.result;
  const against = [...MEASURED_AGAINST, "iperfPort", "requiredGbps", "budget", "sourceLogin", "destinationLogin"];
  return recordEdge(i, run, against, { iperf3OnHosts: "none", destinationPortFree: commands.settings.port }, {
    fingerprint: fingerprintsOf(run.sides),
    routeGet: { forward: run.sides.seen.source.route.text, return: run.sides.seen.destination.route.text },
    routeFiles: { [i.source.alias]: run.sides.seen.source.routeFiles, [i.destination.alias]: run.sides.seen.destination.routeFiles },
    tool: { server: commands.server, client: commands.client, version: r?.version ?? null, protocol: r?.protocol ?? null, streams: r?.streams ?? null },
    measurement: parsed?.measurement ?? null,
    intervals: r?.intervals ?? null,
    cpu: r?.cpu ?? null,
    client: r ? JSON.parse(run.clientText.slice(run.clientText.indexOf("{"), run.clientText.lastIndexOf("}") + 1)) : run.clientText,
    serverLog: run.serverLog,
    budget: { requiredGbps: i.requiredGbps, ...i.budget },
  }, verdict);
}

/**
 * The fabric address discovery found is unknown whenever a host's discovery is re-taken, for any reason
 * (a policy or checkpoint change). The path is then judged by what is known: the config's side of each
 * end (alias, SSH host, interface, and the address it chooses, if it does) and, on refresh, this edge's
 * own observation of both hosts; `up` diffs again with what was found. A host key is never a reason: it
 * verifies the login, and the route is what the figure was taken over (lib/ssh/host-key.ts, withHostKeyOf).
 */
function knownEndpoint(n: EdgeEndpoint | undefined, old: EdgeEndpoint | undefined): EdgeEndpoint | undefined {
  if (!n || typeof n !== "object") return n;
  const { fabricAddressChoice: choice, ...rest } = n;
  const address = hasUnknown(n.fabricAddress) ? (typeof choice === "string" && !hasUnknown(choice) ? choice : old?.fabricAddress) : n.fabricAddress;
  return { ...withHostKeyOf(rest, old), fabricAddress: address! };
}

export const provider: pulumi.dynamic.ResourceProvider = evidenceProvider<FabricEdgeInputs, FabricEdgeOutputs>({
  measuredAgainst: MEASURED_AGAINST,
  updatable: UPDATABLE,
  inputs: edgeInputs,

  async create(inputs) {
    refuseBadInputs(inputs);
    if (inputs.transport === "ucx_rdma") return createRdmaEdge(inputs, MEASURED_AGAINST);
    const tool = inputs.tool as TcpTool;
    const commands = iperf3Commands({
      serverAddress: inputs.destination.fabricAddress,
      clientAddress: inputs.source.fabricAddress,
      port: inputs.iperfPort,
      durationS: tool.durationS,
      streams: tool.streams,
    });
    const run = await withMeasurementLock(process.cwd(), { edge: inputs.edgeId, stack: inputs.stack }, inputs.lockWaitS, () => measure(inputs, commands));
    let result: Iperf3Result;
    try {
      result = parseIperf3Json(run.clientText);
    } catch (err) {
      const reason = `the iperf3 client on ${inputs.source.alias} exited ${run.clientExit}: ${(err as Error).message}`;
      return refuseRecorded(inputs, (err as FabricError).code ?? "NARWHAL_FABRIC_TOOL_OUTPUT", reason, (v) => record(inputs, run, commands, null, v));
    }
    const m = iperf3Measurement(result);
    const measurement: EdgeMeasurement = {
      gbps: m.gbps,
      samplesGbps: [...m.samples],
      sentGbps: result.sentGbps,
      retransmits: result.retransmits,
      startedAt: run.startedAt,
      endedAt: run.endedAt,
    };
    return createdEdge(inputs, run.sides, measurement, (v) => record(inputs, run, commands, { result, measurement }, v));
  },

  compared(olds, news) {
    // A budget is unknown only in a preview that re-captures an engine's cache; a restart usually keeps
    // the geometry, and `up` diffs again with the real figure, so "unknown" is not announced as a change.
    const budget = hasUnknown(news.requiredGbps) || hasUnknown(news.budget) ? { requiredGbps: olds.requiredGbps, budget: olds.budget } : {};
    return {
      olds: { ...olds, source: knownEndpoint(olds.source, undefined)!, destination: knownEndpoint(olds.destination, undefined)! },
      news: { ...news, ...budget, source: knownEndpoint(news.source, olds.source)!, destination: knownEndpoint(news.destination, olds.destination)! },
    };
  },

  // A refresh that saw the path move: the directions that moved are the reasons to re-measure.
  addition: (olds) => ({ replaces: (Object.keys(olds.measured ?? {}) as Array<keyof PathDigests>).filter((k) => olds.observed?.[k] !== olds.measured[k]) }),

  // Only the budget, a login or the port changed: the figure stands and is judged again.
  update: (olds, news) => ({ ...olds, ...news, ...verdictFields(olds.measurement, news.requiredGbps) }),

  async read(id, props) {
    const sides = await withSessions(props, (src, dst) => observe(props, src, dst));
    const observed = digestsOf(sides);
    const observedProblems = [...[sides.forward, sides.back].flatMap((f) => (f.ok ? [] : [f.reason])), ...(sides.rdma?.problems ?? [])];
    return { id, props: { ...props, observed, observedProblems } };
  },
});

/**
 * FabricEdge provider methods (Gate D), loaded at call time by resource.ts (see ../shim.ts).
 *
 * - create: one directed measurement (./create.ts, lib/fabric/edge-measure.ts), holding the measurement lock: observe both hosts'
 *   sides of the path (MTU, address, `ip route get`, route files), refuse a path that is not the fabric,
 *   check that nothing else uses iperf3 or the port, start the server on the destination, run the client
 *   on the source, stop the server whatever happened, and record everything as evidence, with the
 *   reservation the engines on both hosts prove from their counters read around it (./reservation.ts).
 *   A `ucx_rdma` edge does the same with ib_write_bw between its HCA ports, refusing a port that is
 *   not ACTIVE or lacks its GID index first and reading the port counters around the test. The verdict
 *   against the budget is computed, and kept: "below" is reported by the fleet's fabric gate, so the
 *   figure stays on record and a budget change re-evaluates it without re-measuring.
 * - diff: what the measurement was taken against replaces; the budget, logins, port and the engines whose
 *   counters prove the reservation update.
 * - update: recomputes the verdict from the stored measurement; nothing is measured.
 * - read: observes both sides again without traffic, recorded as `observed` beside `measured`, so
 *   `pulumi preview --refresh` replaces exactly the edges whose path moved.
 * - delete: nothing remote; the evidence record stays.
 */
import type * as pulumi from "@pulumi/pulumi";
import { observe } from "../../lib/fabric/edge-measure";
import { digestsOf, verdictFields, type PathDigests } from "../../lib/fabric/edge-outcome";
import { FabricError } from "../../lib/fabric/errors";
import { withHostKeyOf } from "../../lib/ssh/host-key";
import { hasUnknown } from "../../lib/unknown";
import { evidenceProvider } from "../evidence-provider";
import { createRdmaEdge, createTcpEdge } from "./create";
import { edgeInputProblems, edgeInputs, type EdgeEndpoint, type FabricEdgeInputs, type FabricEdgeOutputs } from "./schema";
import { withSessions } from "./session";

/** What the figure was taken against: a change means the figure no longer describes the path. */
const MEASURED_AGAINST = ["edgeId", "source", "destination", "transport", "rdma", "tool"] as const;
/**
 * What only changes how the hosts are reached, what the figure is compared with, or whose counters prove the
 * next measurement's reservation (`engines`: an edge measured before it was an input keeps its figure).
 */
const UPDATABLE = ["stack", "iperfPort", "rdmaPort", "sourceLogin", "destinationLogin", "sourcePrivateKey", "sourcePassword", "destinationPrivateKey", "destinationPassword", "requiredGbps", "budget", "lockWaitS", "engines"] as const;

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
    const problems = edgeInputProblems(inputs);
    if (problems.length) {
      throw new FabricError("NARWHAL_FABRIC_TOOL_SETTINGS", `edge ${inputs.edgeId}: ${problems.map(([, p]) => p).join("; ")}; nothing was run`);
    }
    return (inputs.transport === "ucx_rdma" ? createRdmaEdge : createTcpEdge)(inputs, MEASURED_AGAINST);
  },

  compared(olds, news) {
    // A budget is unknown only in a preview that re-captures an engine's cache; a restart usually keeps
    // the geometry, and `up` diffs again with the real figure, so "unknown" is not announced as a change.
    const budget = hasUnknown(news.requiredGbps) || hasUnknown(news.budget) ? { requiredGbps: olds.requiredGbps, budget: olds.budget } : {};
    // Engine URLs are unknown while a host's discovery is re-taken, for the same reasons as its address above.
    const engines = hasUnknown(news.engines) && olds.engines !== undefined ? { engines: olds.engines } : {};
    return {
      olds: { ...olds, source: knownEndpoint(olds.source, undefined)!, destination: knownEndpoint(olds.destination, undefined)! },
      news: { ...news, ...budget, ...engines, source: knownEndpoint(news.source, olds.source)!, destination: knownEndpoint(news.destination, olds.destination)! },
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

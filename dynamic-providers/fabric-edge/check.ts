/** FabricEdge's inputs as a zod schema: every problem named by field and edge, before any host is touched. */
import { z } from "zod";
import { INTERFACE_PATTERN, ipProblem } from "../../lib/config/formats";
import { hasUnknown } from "../diff";
import { schemaFailures } from "../evidence-provider";
import { across, fieldsOf, inOrder, isFilled } from "../input-rules";
import type { EdgeEndpoint, FabricEdgeInputs } from "./types";

const positive = (v: unknown): boolean => typeof v === "number" && Number.isFinite(v) && v > 0;
const wholeIn = (v: unknown, lo: number, hi: number): boolean => Number.isSafeInteger(v) && (v as number) >= lo && (v as number) <= hi;

const endpointFields = z.looseObject({
  alias: z.unknown().refine(isFilled, { error: "alias is empty" }),
  sshHost: z.unknown().refine(isFilled, { error: "sshHost is empty" }),
  hostKey: z.unknown().refine(isFilled, { error: "hostKey is empty (discovery records it)" }),
  fabricInterface: z.unknown().refine((f) => typeof f === "string" && INTERFACE_PATTERN.test(f), { error: (iss) => `fabricInterface ${JSON.stringify(iss.input)} is not an interface name` }),
  fabricAddress: z.unknown().superRefine((a, ctx) => {
    const ip = typeof a === "string" ? ipProblem(a) : "missing";
    if (ip) ctx.addIssue({ code: "custom", message: `fabricAddress ${JSON.stringify(a)}: ${ip}` });
  }),
});

/** One end of the edge: all its problems in one refusal that names the side. */
const endpoint = (side: string) =>
  z.unknown().superRefine((e, ctx) => {
    const problems = endpointFields.safeParse(fieldsOf(e)).error?.issues.map((issue) => issue.message) ?? [];
    if (problems.length) ctx.addIssue({ code: "custom", message: `${side} ${problems.join("; ")}` });
  });

const login = (side: string) =>
  z.unknown().refine(
    (v) => {
      const l = v as Record<string, unknown> | null;
      return !!l && isFilled(l.host) && wholeIn(l.port, 1, 65535) && isFilled(l.user) && positive(l.connectTimeoutS) && wholeIn(l.maxSessions, 1, 64);
    },
    { error: `${side}Login needs host, port (1-65535), user, connectTimeoutS (> 0) and maxSessions (1-64)` },
  );

/** The edge is named by its ends, and joins two hosts. */
const namedByItsEnds = across((i, refuse) => {
  if (hasUnknown(i.source) || hasUnknown(i.destination)) return;
  const [source, destination] = [i.source, i.destination] as Array<EdgeEndpoint | undefined>;
  const expected = `${source?.alias}->${destination?.alias}`;
  if (i.edgeId !== expected) refuse("edgeId", `edgeId ${JSON.stringify(i.edgeId)} must be "${expected}"`);
  else if (source?.alias === destination?.alias) refuse("edgeId", `edge ${i.edgeId} joins a host to itself: traffic inside one host is not a fabric edge`);
});

/** The tool's settings are the transport's: iperf3's for tcp, ib_write_bw's (and both HCA ports) for ucx_rdma. */
const toolOfTransport = across((i, refuse) => {
  if (hasUnknown(i.tool) || hasUnknown(i.transport)) return;
  const t = (i.tool ?? null) as Record<string, unknown> | null;
  if (i.transport === "ucx_rdma") {
    if (!(wholeIn(t?.size, 1, 2 ** 31) && wholeIn(t?.iterations, 5, 100_000_000))) {
      refuse("tool", `tool needs size (bytes, 1 or more) and iterations (5 or more) for ucx_rdma, got ${JSON.stringify(i.tool)}`);
    }
    const r = i.rdma as FabricEdgeInputs["rdma"] | undefined;
    const end = (e: unknown) => {
      const x = e as Record<string, unknown> | null | undefined;
      return !!x && typeof x.hca === "string" && /^[A-Za-z0-9_.-]+$/.test(x.hca) && wholeIn(x.port, 1, 255) && (x.gidIndex === null || wholeIn(x.gidIndex, 0, 255));
    };
    if (!hasUnknown(i.rdma) && !(r && end(r.source) && end(r.destination))) {
      refuse("rdma", `rdma needs source and destination {hca, port, gidIndex} for ucx_rdma, got ${JSON.stringify(i.rdma ?? null)}`);
    }
    if (i.rdmaPort !== undefined && !hasUnknown(i.rdmaPort) && !wholeIn(i.rdmaPort, 1, 65535)) refuse("rdmaPort", `rdmaPort ${JSON.stringify(i.rdmaPort)} (1-65535)`);
  } else if (i.transport === "tcp" && !(wholeIn(t?.durationS, 1, 3600) && wholeIn(t?.streams, 1, 128))) {
    refuse("tool", `tool needs durationS (whole seconds, 1-3600) and streams (1-128), got ${JSON.stringify(i.tool)}`);
  }
});

/** FabricEdgeInputs, in the order their refusals are reported. */
export const edgeInputs = inOrder(
  z.looseObject({ source: endpoint("source"), sourceLogin: login("source"), destination: endpoint("destination"), destinationLogin: login("destination") }),
  namedByItsEnds,
  z.looseObject({
    transport: z.unknown().refine((t) => t === "tcp" || t === "ucx_rdma", { error: (iss) => `transport ${JSON.stringify(iss.input)} (tcp or ucx_rdma)` }),
  }),
  toolOfTransport,
  z.looseObject({
    iperfPort: z.unknown().refine((p) => wholeIn(p, 1, 65535), { error: (iss) => `iperfPort ${JSON.stringify(iss.input)} (1-65535)` }),
    requiredGbps: z.unknown().refine((g) => typeof g === "number" && !Number.isNaN(g), { error: (iss) => `requiredGbps ${JSON.stringify(iss.input)} is not a number` }),
    lockWaitS: z.unknown().refine(positive, { error: (iss) => `lockWaitS ${JSON.stringify(iss.input)} (seconds, above 0)` }),
  }),
);

/** `[property, reason]` per problem; values only known after apply (preview) are not judged. */
export function edgeInputProblems(i: FabricEdgeInputs): Array<[keyof FabricEdgeInputs, string]> {
  return schemaFailures(edgeInputs, i as unknown as Record<string, unknown>).map((f) => [f.property as keyof FabricEdgeInputs, f.reason]);
}

/** FabricEdge's inputs as one zod schema (every problem named by field and edge, before any host is touched), the types it produces, and the outputs. */
import { z } from "zod";
import { INTERFACE_PATTERN, ipProblem } from "../../lib/config/formats";
import type { LinkFingerprint } from "../../lib/fabric/fingerprint";
import type { EdgeMeasurement, EdgeVerdict, PathDigests } from "../../lib/fabric/edge-outcome";
import type { EdgeHostEngine, EdgeReservationSummary } from "../../lib/fabric/edge-reservation";
import { aboveZero, filled, got, oneOf, whole } from "../../lib/provider-fields";
import type { StoredLogin } from "../../lib/ssh/stored-login";
import { hasUnknown } from "../../lib/unknown";
import { schemaFailures } from "../evidence-provider";
import { across, each, fieldsOf, inOrder } from "../../lib/input-rules";

const notInterface = (iss: { input?: unknown }) => `fabricInterface ${JSON.stringify(iss.input)} is not an interface name`;

/** One end of the edge as measured: which machine, which interface, which address. */
const endpointSchema = z.object({
  /** Host alias in the fleet config. */
  alias: filled("alias is empty"),
  /** Where the config says the alias is (`hosts[].destination`'s host): another machine is another path. */
  sshHost: filled("sshHost is empty"),
  /** The key discovery verified: every login to the machine is pinned to it (a re-pinned key is no new path). */
  hostKey: filled("hostKey is empty (discovery records it)"),
  /** From the config. */
  fabricInterface: z.string({ error: notInterface }).regex(INTERFACE_PATTERN, { error: notInterface }),
  /** The address discovery found on the interface: the server binds it (destination), the client binds it (source). */
  fabricAddress: z.string({ error: (iss) => `fabricAddress ${JSON.stringify(iss.input)}: missing` }).superRefine((a, ctx) => {
    const ip = ipProblem(a);
    if (ip) ctx.addIssue({ code: "custom", message: `fabricAddress ${JSON.stringify(a)}: ${ip}` });
  }),
  /** The config's choice among the interface's addresses, when it makes one. */
  fabricAddressChoice: z.string().optional(),
});
export type EdgeEndpoint = z.infer<typeof endpointSchema>;

/** One end of the edge: all its problems in one refusal that names the side. */
const endpoint = (side: string) =>
  z.custom<EdgeEndpoint>().superRefine((e, ctx) => {
    const problems = endpointSchema.safeParse(fieldsOf(e)).error?.issues.map((issue) => issue.message) ?? [];
    if (problems.length) ctx.addIssue({ code: "custom", message: `${side} ${problems.join("; ")}` });
  });

const loginSchema = z.object({ host: z.string().min(1), port: whole(1, 65535), user: z.string().min(1), connectTimeoutS: aboveZero(), maxSessions: whole(1, 64) });
/** How to log in to one end; its key and password travel separately, as secrets, and its alias and pinned key are the endpoint's. */
const login = (side: string) =>
  z.custom<StoredLogin>((l) => loginSchema.safeParse(l).success, {
    error: `${side}Login needs host, port (1-65535), user, connectTimeoutS (> 0) and maxSessions (1-64)`,
  });

/** iperf3's test length and parallel streams (a TCP edge). */
const tcpTool = z.object({ durationS: whole(1, 3600), streams: whole(1, 128) });
/** `ib_write_bw`'s message size (`-s`, bytes) and iterations (`-n`) (an RDMA edge). */
const rdmaTool = z.object({ size: whole(1, 2 ** 31), iterations: whole(5, 100_000_000) });
export type TcpTool = z.infer<typeof tcpTool>;
export type RdmaTool = z.infer<typeof rdmaTool>;
const rdmaEnd = z.object({ hca: z.string().regex(/^[A-Za-z0-9_.-]+$/), port: whole(1, 255), gidIndex: whole(0, 255).nullable() });
const rdmaEnds = z.object({ source: rdmaEnd, destination: rdmaEnd });

/** One engine on the edge's hosts, refused by its id: its `/metrics` is read over the host's SSH login, so only plain http. */
const hostEngine = (id: unknown) => {
  const k = (field: string) => `engines[${String(id)}].${field}`;
  return z.object({
    engineId: filled(got("engines[].engineId", "must be the engine's id")),
    side: oneOf(k("side"), ["source", "destination"]),
    url: z.string({ error: got(k("url"), "must be the engine's http base URL") }).regex(/^http:\/\/[^/\s]+(\/\S*)?$/, {
      error: got(k("url"), "must be the engine's http base URL (its /metrics is read through the host's SSH login, which carries plain http)"),
    }),
  });
};

/** The engines on the edge's two hosts: each well formed, none twice. */
const hostEngines = z
  .custom<EdgeHostEngine[]>()
  .refine((v) => Array.isArray(v), { error: (iss) => `engines must list the engines on the edge's two hosts (empty when there are none), got ${JSON.stringify(iss.input)}` })
  .superRefine(each((e) => hostEngine(e.engineId)))
  .superRefine((v, ctx) => {
    if (!Array.isArray(v)) return;
    const ids = v.map((e) => (e as Partial<EdgeHostEngine> | null)?.engineId);
    const twice = [...new Set(ids.filter((id, k) => typeof id === "string" && ids.indexOf(id) !== k))];
    if (twice.length) ctx.addIssue({ code: "custom", message: `engines lists ${twice.join(", ")} more than once: an engine runs on one host` });
  });

const fields = z.object({
  /** Names the evidence folder. */
  stack: z.string(),
  /** `<source>-><destination>`. */
  edgeId: z.string(),
  source: endpoint("source"),
  sourceLogin: login("source"),
  destination: endpoint("destination"),
  destinationLogin: login("destination"),
  transport: z.enum(["tcp", "ucx_rdma"], { error: (iss) => `transport ${JSON.stringify(iss.input)} (tcp or ucx_rdma)` }),
  /** HCA ports for `ucx_rdma`; absent for tcp. */
  rdma: rdmaEnds.optional(),
  /** The tool's settings, part of what the figure means: iperf3's (tcp) or ib_write_bw's (ucx_rdma). */
  tool: z.union([tcpTool, rdmaTool]),
  /** The iperf3 server's port on the destination (checked free first); which one is used does not change the figure. */
  iperfPort: whole(1, 65535, (iss) => `iperfPort ${JSON.stringify(iss.input)} (1-65535)`),
  /** `ucx_rdma`: ib_write_bw's TCP exchange port (`-p`) on the destination, checked free first; default 18515. */
  rdmaPort: z.number().optional(),
  /** Stored without the key and password; the bastion with `pinnedHostKey` (see `storedJump`). */
  sourcePrivateKey: z.string().optional(),
  sourcePassword: z.string().optional(),
  destinationPrivateKey: z.string().optional(),
  destinationPassword: z.string().optional(),
  /** The budget the edge is held to: changing it re-evaluates the verdict, never re-measures. */
  requiredGbps: z.number({ error: (iss) => `requiredGbps ${JSON.stringify(iss.input)} is not a number` }),
  /** Whose budget that is, for the verdict's record. */
  budget: z.object({ governingEngine: z.string(), budgetKey: z.string(), formula: z.string() }),
  /**
   * Every engine on the source and destination hosts, whose counters prove the edge had them idle
   * (observations.reservation); who they are changes nothing of the figure, so this only updates.
   */
  engines: hostEngines,
  /** Bounded wait for another edge's measurement to finish before this one refuses. */
  lockWaitS: aboveZero((iss) => `lockWaitS ${JSON.stringify(iss.input)} (seconds, above 0)`),
});

/** What a directed edge's measurement is taken against, plus how to reach its hosts. */
export type FabricEdgeInputs = z.infer<typeof fields>;

const pick = (...keys: Array<keyof typeof fields.shape>) => fields.pick(Object.fromEntries(keys.map((k) => [k, true])) as never);

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
  if (i.transport === "ucx_rdma") {
    if (!rdmaTool.safeParse(i.tool).success) refuse("tool", `tool needs size (bytes, 1 or more) and iterations (5 or more) for ucx_rdma, got ${JSON.stringify(i.tool)}`);
    if (!hasUnknown(i.rdma) && !rdmaEnds.safeParse(i.rdma).success) {
      refuse("rdma", `rdma needs source and destination {hca, port, gidIndex} for ucx_rdma, got ${JSON.stringify(i.rdma ?? null)}`);
    }
    if (i.rdmaPort !== undefined && !hasUnknown(i.rdmaPort) && !whole(1, 65535).safeParse(i.rdmaPort).success) refuse("rdmaPort", `rdmaPort ${JSON.stringify(i.rdmaPort)} (1-65535)`);
  } else if (i.transport === "tcp" && !tcpTool.safeParse(i.tool).success) {
    refuse("tool", `tool needs durationS (whole seconds, 1-3600) and streams (1-128), got ${JSON.stringify(i.tool)}`);
  }
});

/** FabricEdgeInputs, in the order their refusals are reported. */
export const edgeInputs = inOrder(
  pick("source", "sourceLogin", "destination", "destinationLogin"),
  namedByItsEnds,
  pick("transport"),
  toolOfTransport,
  pick("iperfPort", "requiredGbps", "lockWaitS", "engines"),
);

/** `[property, reason]` per problem; values only known after apply (preview) are not judged. */
export function edgeInputProblems(i: FabricEdgeInputs): Array<[keyof FabricEdgeInputs, string]> {
  return schemaFailures(edgeInputs, i as unknown as Record<string, unknown>).map((f) => [f.property as keyof FabricEdgeInputs, f.reason]);
}

export type FabricEdgeOutputs = FabricEdgeInputs & EdgeVerdict & {
  measurement: EdgeMeasurement;
  fingerprint: { forward: LinkFingerprint; return: LinkFingerprint };
  /** As measured at create. */
  measured: PathDigests;
  /** As last observed (create, or `read` during a refresh); a difference replaces the edge. */
  observed: PathDigests;
  /** Why `observed` differs, when a side could not be fingerprinted at the last refresh. */
  observedProblems: string[];
  evidence: { relativePath: string; digest: string };
  /** Whether the engines on the edge's hosts served nothing during the measurement; absent for an edge measured before edges proved it. */
  reservation?: EdgeReservationSummary;
};

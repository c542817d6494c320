import * as pulumi from "@pulumi/pulumi";
import type * as command from "@pulumi/command";
import { valueOnly } from "./value-only";
import { OpaqueComponent } from "./opaque-component";
import type { EngineSpec, FleetSpec } from "../lib/config/types";
import type { HostLogin } from "../lib/ssh/login";
import { storedJump, type StoredLogin } from "../lib/ssh/stored-login";
import type { CacheGroupSummary } from "../lib/fleet/cache-summary";
import { edgeBudget, meshEdges, meshEngines } from "../lib/fabric/mesh";
import { edgeLockWaitS, rdmaLockWaitS } from "../lib/fabric/iperf3-remote";
import type { EdgeMatrix } from "../lib/fabric/matrix";
import type { FabricVerdict } from "../lib/fabric/budget";
import type { EdgeHostEngine } from "../lib/fabric/edge-reservation";
import { FabricEdge, type EdgeEndpointArgs } from "../dynamic-providers/fabric-edge/resource";
import { FabricGate } from "../dynamic-providers/fabric-gate/resource";
import type { HostDiscovery } from "../dynamic-providers/host-discovery/resource";
import type { Engine } from "./engine";

/** What the mesh needs of each physical host: its login, its discovery, and the credentials it uses. */
export interface FabricHost {
  login: HostLogin;
  discovery: HostDiscovery;
  connection: command.types.input.remote.ConnectionArgs;
}

export interface FabricMeshArgs {
  spec: FleetSpec;
  stack: string;
  hosts: ReadonlyMap<string, FabricHost>;
  engines: ReadonlyArray<{ spec: EngineSpec; engine: Engine }>;
  cacheGroups: pulumi.Output<CacheGroupSummary[]>;
}

/** Per edge, as the stack output shows it. */
export interface EdgeSummary {
  gbps: number;
  requiredGbps: number;
  verdict: FabricVerdict;
  retransmits: number | null;
  evidence: { relativePath: string; digest: string };
}

/**
 * Gate D: one FabricEdge per directed pair of physical hosts that carries KV, measured one at a time
 * in a fixed order after every engine has started and captured its cache, then the gate over all of
 * them (edge matrix, evidence, failure when an edge is below its budget).
 */
export class FabricMesh extends OpaqueComponent {
  public readonly edges: FabricEdge[];
  /** What sends traffic later (attestation, profiling, router) depends on this. */
  public readonly gate: FabricGate;
  public readonly edgeMatrix: pulumi.Output<EdgeMatrix>;
  public readonly summary: pulumi.Output<{ matrix: EdgeMatrix; evidence: { relativePath: string; digest: string }; edges: Record<string, EdgeSummary> }>;

  constructor(name: string, args: FabricMeshArgs, opts?: pulumi.ComponentResourceOptions) {
    super("narwhal:fabric:FabricMesh", name, {}, opts);
    const { spec, stack, hosts } = args;
    const planned = meshEdges(meshEngines(spec));
    // Fields stay separate inputs, so a preview that re-takes a host's discovery leaves the config's side known.
    const endpoint = (alias: string): EdgeEndpointArgs => {
      const h = hosts.get(alias)!;
      const configured = spec.hosts.find((x) => x.alias === alias)!;
      return {
        alias,
        sshHost: h.login.host,
        fabricInterface: configured.fabricInterface,
        fabricAddressChoice: configured.fabricAddress,
        hostKey: h.discovery.hostKey,
        fabricAddress: h.discovery.fabricAddress,
      };
    };
    // As edges have always stored it: the alias and pinned key are the endpoint's.
    const login = (alias: string): StoredLogin => {
      const l = hosts.get(alias)!.login;
      return { host: l.host, port: l.port, user: l.user, jump: storedJump(l.jump), connectTimeoutS: l.connectTimeoutS, maxSessions: spec.ssh.maxSessionsPerHost };
    };

    // Every engine on an edge's two hosts: their KV transfers share its link, so their counters prove it idle.
    const hostEngines = (source: string, destination: string): pulumi.Output<EdgeHostEngine[]> => {
      const on = args.engines.flatMap(({ spec: s, engine }) =>
        s.host === source || s.host === destination ? [{ engineId: s.id, side: s.host === source ? ("source" as const) : ("destination" as const), engine }] : [],
      );
      return pulumi.all(on.map((e) => e.engine.url)).apply((urls) => on.map((e, k) => ({ engineId: e.engineId, side: e.side, url: urls[k] })));
    };

    // Engines first (their caches captured, nothing serving yet), then each edge after the one before it.
    let previous: pulumi.Resource[] = args.engines.map((e) => e.engine);
    this.edges = planned.map((e) => {
      // The whole fleet's caches decide it: its value alone, not their list in each edge's state (./value-only.ts).
      const budget = valueOnly(args.cacheGroups.apply((groups) => edgeBudget(e, groups)));
      const rdma = e.transport === "ucx_rdma";
      // A TCP edge's inputs are what they always were: RDMA's settings go only to RDMA edges.
      const edge = new FabricEdge(
        `${name}-${e.source}-to-${e.destination}`,
        {
          stack,
          edgeId: e.id,
          source: endpoint(e.source),
          destination: endpoint(e.destination),
          transport: e.transport,
          rdma: e.rdma ?? undefined,
          tool: rdma ? { size: spec.fabric.rdmaMessageBytes, iterations: spec.fabric.rdmaIterations } : { durationS: spec.fabric.durationS, streams: 1 },
          iperfPort: spec.fabric.iperfPort,
          rdmaPort: rdma ? spec.fabric.rdmaPort : undefined,
          sourceLogin: login(e.source),
          destinationLogin: login(e.destination),
          sourcePrivateKey: hosts.get(e.source)!.connection.privateKey,
          sourcePassword: hosts.get(e.source)!.connection.password,
          destinationPrivateKey: hosts.get(e.destination)!.connection.privateKey,
          destinationPassword: hosts.get(e.destination)!.connection.password,
          requiredGbps: budget.requiredGbps,
          budget: budget.apply(({ governingEngine, budgetKey, formula }) => ({ governingEngine, budgetKey, formula })),
          lockWaitS: rdma ? rdmaLockWaitS() : edgeLockWaitS(spec.fabric.durationS),
          engines: hostEngines(e.source, e.destination),
        },
        { parent: this, dependsOn: previous },
      );
      // A measurement beside the engines' KV traffic is not the runbook's idle figure; the output keeps why.
      edge.reservation.apply((r) => {
        if (r && !r.idle) void pulumi.log.warn(`fabric edge ${e.id}: its hosts' engines were not reserved: ${r.reasons.join("; ")}`, edge);
      });
      previous = [edge];
      return edge;
    });

    const matrixHosts = [...new Set(planned.flatMap((e) => [e.source, e.destination]))].sort();
    this.gate = new FabricGate(
      `${name}-gate`,
      {
        stack,
        hosts: matrixHosts,
        edges: pulumi.all(
          this.edges.map((edge, k) =>
            pulumi.all([edge.measurement, edge.requiredGbps, edge.verdict, edge.verdictReason, edge.evidence]).apply(([m, requiredGbps, verdict, reason, evidence]) => ({
              id: planned[k].id,
              source: planned[k].source,
              destination: planned[k].destination,
              gbps: m.gbps,
              requiredGbps,
              verdict,
              reason,
              retransmits: m.retransmits,
              evidence,
            })),
          ),
        ),
      },
      { parent: this },
    );
    this.edgeMatrix = this.gate.matrix;
    this.summary = pulumi.all([this.gate.matrix, this.gate.evidence, this.gate.edges]).apply(([matrix, evidence, edges]) => ({
      matrix,
      evidence,
      edges: Object.fromEntries(edges.map((e) => [e.id, { gbps: e.gbps!, requiredGbps: e.requiredGbps, verdict: e.verdict, retransmits: e.retransmits ?? null, evidence: e.evidence }])),
    }));
    this.registerOutputs({ edgeMatrix: this.edgeMatrix });
  }
}

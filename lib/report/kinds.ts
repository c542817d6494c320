/** The runbook gate a piece of evidence belongs to; `other` is a resource of no known kind. */
export type Gate = "A" | "B" | "C" | "D" | "E" | "F" | "G" | "other";

export const GATE_TITLES: Record<Gate, string> = {
  A: "Gate A: discovery, replicas, generated config",
  B: "Gate B: narwhal install",
  C: "Gate C: engines",
  D: "Gate D: fabric",
  E: "Gate E: attestation",
  F: "Gate F: profiles, preflight, calibration",
  G: "Gate G: router, monitoring and capacity trial",
  other: "other resources",
};

export const GATE_ORDER: Gate[] = ["A", "B", "C", "D", "E", "F", "G", "other"];

export interface EvidenceKind {
  kind: string;
  gate: Gate;
}

/** Dynamic resources are typed `pulumi-nodejs:dynamic/narwhal:<Name>`: the name says what was measured. */
const DYNAMIC: Record<string, EvidenceKind> = {
  HostDiscovery: { kind: "discovery", gate: "A" },
  ReplicaAgreement: { kind: "replica check", gate: "A" },
  DeploymentConfig: { kind: "generated config", gate: "A" },
  ImageCheck: { kind: "image check", gate: "C" },
  EngineGeneration: { kind: "generation", gate: "C" },
  CacheCapture: { kind: "cache capture", gate: "C" },
  PeerWave: { kind: "KV peer restart wave", gate: "C" },
  FabricEdge: { kind: "fabric edge", gate: "D" },
  FabricGate: { kind: "fabric gate", gate: "D" },
  Attestation: { kind: "attestation", gate: "E" },
  Profile: { kind: "profile", gate: "F" },
  ProfileStore: { kind: "profile store", gate: "F" },
  Preflight: { kind: "preflight", gate: "F" },
  Calibration: { kind: "first-token calibration", gate: "F" },
  LoadTrial: { kind: "capacity trial point", gate: "G" },
};

/** Gates B and G run as command scripts; their one dynamic resource is the record each keeps. */
const COMMAND_RECORDS: Record<string, EvidenceKind> = {
  "-narwhal-record": { kind: "install record", gate: "B" },
  "-router-record": { kind: "router record", gate: "G" },
};

/** The component types in a URN's type chain (`a$b$c::name` → a, b), outermost first. */
function parentTypes(urn: string): string[] {
  const chain = urn.split("::")[2] ?? "";
  return chain.split("$").slice(0, -1);
}

/**
 * What a resource is as evidence, from its type and, for the generic command and docker resources, the
 * component it sits in and its name's suffix (components/runtime and components/attestation name them).
 * Undefined for what holds no evidence: the stack, components and providers.
 */
export function evidenceKind(type: string, urn: string, name: string, custom: boolean): EvidenceKind | undefined {
  if (!custom || type.startsWith("pulumi:providers:") || type === "pulumi:pulumi:Stack") return undefined;
  const dynamic = /^pulumi-nodejs:dynamic\/narwhal:(\w+)$/.exec(type);
  if (dynamic?.[1] === "CommandRecord") return Object.entries(COMMAND_RECORDS).find(([suffix]) => name.endsWith(suffix))?.[1] ?? { kind: "command record", gate: "other" };
  const parents = parentTypes(urn);
  if (dynamic?.[1] === "Liveness" || dynamic?.[1] === "EngineLiveness") return livenessKind(parents);
  if (dynamic) return DYNAMIC[dynamic[1]] ?? { kind: dynamic[1], gate: "other" };
  if (parents.includes("narwhal:attestation:AttestationMesh") && name.endsWith("-sidecar")) return { kind: "attestation sidecar", gate: "E" };
  if (parents.includes("narwhal:engine:Engine")) {
    if (type === "docker:index/container:Container") return { kind: "engine container", gate: "C" };
    if (name.endsWith("-gpu-wait")) return { kind: "GPU wait", gate: "C" };
    if (name.endsWith("-started")) return { kind: "engine start", gate: "C" };
    return { kind: "engine process", gate: "C" };
  }
  if (parents.includes("narwhal:router:NarwhalInstall")) return { kind: "narwhal install", gate: "B" };
  if (parents.includes("narwhal:router:Router")) return { kind: routerStep(name), gate: "G" };
  if (parents.includes("narwhal:observability:Monitoring")) return { kind: "monitoring", gate: "G" };
  return { kind: type, gate: "other" };
}

/** The router's commands by name: its checks before a start (port, single controller), its front, its proof, its process. */
function routerStep(name: string): string {
  if (name.endsWith("-proof")) return "router proof";
  if (name.endsWith("-front")) return "router front";
  if (name.endsWith("-port-check")) return "router port check";
  if (/-controller-check-[^-]+$/.test(name)) return "router controller check";
  return "router process";
}

/** One liveness resource type watches engines (Gate C), the router and monitoring (Gate G): the component says which. */
function livenessKind(parents: string[]): EvidenceKind {
  if (parents.includes("narwhal:router:Router")) return { kind: "router liveness", gate: "G" };
  if (parents.includes("narwhal:observability:Monitoring")) return { kind: "monitoring liveness", gate: "G" };
  return { kind: "engine liveness", gate: "C" };
}

/**
 * Where a first `up`'s time goes, gate by gate, from the engine's event stream: each resource's step runs
 * from its pre-event to its outputs event. A resource belongs to the gate of the nearest component or type
 * in its URN's type chain that the table names (an engine's process is Gate C through its Engine component).
 */
import type { EngineEvent } from "@pulumi/pulumi/automation";
import type { GateId } from "../../lib/evidence/gates";
import { median } from "./cli-run";

const GATE_OF: Readonly<Record<string, GateId>> = {
  "narwhal:discovery:Discovery": "A",
  HostDiscovery: "A",
  ReplicaAgreement: "A",
  DeploymentConfig: "A",
  "narwhal:router:NarwhalInstall": "B",
  "narwhal:engine:Engine": "C",
  ImageCheck: "C",
  EngineGeneration: "C",
  CacheCapture: "C",
  PeerWave: "C",
  "narwhal:fabric:FabricMesh": "D",
  FabricEdge: "D",
  FabricGate: "D",
  "narwhal:attestation:AttestationMesh": "E",
  Attestation: "E",
  "narwhal:profiles:ProfileMesh": "F",
  Profile: "F",
  ProfileStore: "F",
  Preflight: "F",
  Calibration: "F",
  "narwhal:router:RouterHost": "G",
  "narwhal:router:Router": "G",
  "narwhal:observability:Monitoring": "G",
  LoadTrial: "G",
};

export interface GateTime {
  /** Resources whose step finished. */
  resources: number;
  /** From the gate's first step starting to its last one ending, seconds. */
  spanS: number;
  /** The steps' own durations added up, seconds: more than the span when steps ran side by side. */
  stepsS: number;
  /** The longest single step, seconds. */
  longestStepS: number;
}

/** The gate of a URN: its own type, then its parents' from the nearest out. */
export function gateOfUrn(urn: string): GateId | "other" {
  const chain = urn.split("::")[2]?.split("$") ?? [];
  for (const type of chain.reverse()) {
    const gate = GATE_OF[type] ?? GATE_OF[type.split(":").pop() ?? ""];
    if (gate) return gate;
  }
  return "other";
}

/**
 * Whether a step did work of its own: the program's components (`narwhal:`) open before their children and
 * close after them, and the stack and providers hold no measurement, so none of them is timed.
 */
const timed = (type: string) => !type.startsWith("narwhal:") && !type.startsWith("pulumi:");

/** The fabric gate's edges, measured one after another: what each step cost beyond its measurement. */
export interface EdgeTimes {
  edges: number;
  /** What each edge's tool runs for (`fabric.durationS`), seconds. */
  measureS: number;
  medianStepS: number;
  maxStepS: number;
  /** The median step less the measurement: logins, the server's start, the record. */
  medianOverheadS: number;
}

/** Median and maximum of one FabricEdge step's seconds against the measurement each makes. */
export function edgeTimes(stepsS: readonly number[], measureS: number): EdgeTimes {
  const mid = stepsS.length ? median([...stepsS]) : 0;
  const round = (s: number) => Number(s.toFixed(2));
  return { edges: stepsS.length, measureS, medianStepS: mid, maxStepS: round(Math.max(0, ...stepsS)), medianOverheadS: round(mid - measureS) };
}

/** Collects step times of one operation; pass `onEvent` to the Automation API call. */
export function gateTimes(): { onEvent: (e: EngineEvent) => void; times: () => Record<string, GateTime>; edges: (measureS: number) => EdgeTimes } {
  const started = new Map<string, number>();
  const steps: Array<{ gate: string; start: number; end: number; type: string }> = [];
  const onEvent = (e: EngineEvent) => {
    const pre = e.resourcePreEvent?.metadata;
    const out = e.resOutputsEvent?.metadata;
    if (pre && pre.op !== "same" && timed(pre.type)) started.set(pre.urn, Date.now());
    if (out && started.has(out.urn)) steps.push({ gate: gateOfUrn(out.urn), start: started.get(out.urn)!, end: Date.now(), type: out.type });
  };
  const times = () => {
    const by: Record<string, GateTime> = {};
    for (const gate of [...new Set(steps.map((s) => s.gate))].sort()) {
      const mine = steps.filter((s) => s.gate === gate);
      const seconds = (ms: number) => Number((ms / 1000).toFixed(1));
      by[gate] = {
        resources: mine.length,
        spanS: seconds(Math.max(...mine.map((s) => s.end)) - Math.min(...mine.map((s) => s.start))),
        stepsS: seconds(mine.reduce((a, s) => a + s.end - s.start, 0)),
        longestStepS: seconds(Math.max(...mine.map((s) => s.end - s.start))),
      };
    }
    return by;
  };
  const edges = (measureS: number) => edgeTimes(steps.filter((s) => s.type.endsWith(":FabricEdge")).map((s) => (s.end - s.start) / 1000), measureS);
  return { onEvent, times, edges };
}

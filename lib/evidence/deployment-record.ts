/**
 * The runbook's deployment record: "for every gate, retain host or stable host alias; full source
 * revision; starting state; commands executed; exit status; generated artifacts and paths". Each
 * evidence record already carries those fields for one measurement; this gathers them per gate into one
 * index, which is itself stored as a `deployment-record` record so it is as immutable as what it lists.
 */
import { GATES, gateOfKind, type GateId } from "./gates";
import { evidenceRecord, type EvidenceRecord, type EvidenceVerdict } from "./record";
import { LOAD_TRIAL_KIND, trialStep, type TrialStepSummary } from "./trial-step";

/** A record read back from the store, with where it is and the digest that proves it unchanged. */
export interface StoredRecord {
  readonly relativePath: string;
  readonly digest: string;
  readonly record: EvidenceRecord;
}

/** One command of a step, as the runbook asks for it: where it ran, what it ran, how it ended. */
export interface StepCommand {
  host: string;
  argv?: string[];
  scriptSha256?: string;
  exitStatus: number | null;
  signal?: string;
}

/** One measurement within a gate. */
export interface GateStep {
  kind: string;
  /** `host sim1`, `engine e0`, `edge sim1->sim2`, `fleet dev`. */
  subject: string;
  /** Every host alias the step touched: its subject's hosts and the hosts its commands ran on. */
  hosts: string[];
  sourceRevision: string;
  /** Absent when the measurement had nothing to record before it started. */
  startingState?: unknown;
  commands: StepCommand[];
  artifacts: Array<{ name: string; path: string; sha256: string; bytes: number }>;
  /** For a trial point (`load-trial`), decided by the trial's own verdict: see trial-step.ts. */
  verdict: EvidenceVerdict;
  /** A trial point's id, offered rate and trial verdict. */
  trial?: TrialStepSummary;
  startedAt: string;
  endedAt: string;
  /** The record's path in the evidence store and its digest. */
  record: { relativePath: string; digest: string };
  /**
   * False once a later record of the same kind and subject exists: a retry or a re-measurement. Kept,
   * since the runbook keeps a failed attempt's evidence, but only current steps decide the gate.
   */
  current: boolean;
}

/** `not-recorded`: the store holds no record of the gate (it has not run, or it keeps no store record). */
export type GateStatus = "pass" | "fail" | "info" | "not-recorded";

export interface GateEntry {
  gate: GateId;
  title: string;
  status: GateStatus;
  steps: GateStep[];
}

export interface DeploymentRecord {
  stack: string;
  /** Every source revision the steps were taken with; more than one means the program changed between gates. */
  sourceRevisions: string[];
  gates: GateEntry[];
  /** Steps of kinds no gate claims, kept so nothing in the store is left out of the record. */
  unassigned: GateStep[];
}

/** The kind the index is stored under; never listed inside another index. */
export const DEPLOYMENT_RECORD_KIND = "deployment-record";

/** Engine id -> host alias, so a step about an engine names the host it ran on. */
export type EngineHosts = Readonly<Record<string, string>>;

function hostsOf(record: EvidenceRecord, engineHosts: EngineHosts): string[] {
  const { kind, alias } = record.subject;
  const fromSubject = kind === "host" ? [alias] : kind === "edge" ? alias.split("->") : kind === "engine" && engineHosts[alias] ? [engineHosts[alias]] : [];
  return [...new Set([...fromSubject, ...record.commands.map((c) => c.host)])].sort();
}

function stepOf({ relativePath, digest, record }: StoredRecord, engineHosts: EngineHosts): GateStep {
  const judged = record.kind === LOAD_TRIAL_KIND ? trialStep(record.subject.alias, record.observations, record.verdict) : { verdict: record.verdict };
  return {
    kind: record.kind,
    subject: `${record.subject.kind} ${record.subject.alias}`,
    hosts: hostsOf(record, engineHosts),
    sourceRevision: record.sourceRevision,
    ...(record.startingState === undefined ? {} : { startingState: record.startingState }),
    commands: record.commands.map((c) => ({
      host: c.host,
      ...(c.argv ? { argv: c.argv } : {}),
      ...(c.scriptSha256 ? { scriptSha256: c.scriptSha256 } : {}),
      exitStatus: c.exitStatus,
      ...(c.signal ? { signal: c.signal } : {}),
    })),
    artifacts: record.artifacts.map((a) => ({ name: a.name, path: a.relativePath, sha256: a.sha256, bytes: a.bytes })),
    ...judged,
    startedAt: record.startedAt,
    endedAt: record.endedAt,
    record: { relativePath, digest },
    current: true,
  };
}

/** Marks every step but the last of each kind and subject as superseded. */
function markSuperseded(steps: GateStep[]): void {
  const latest = new Map<string, GateStep>();
  for (const step of [...steps].sort(byTime)) latest.set(`${step.kind}\0${step.subject}`, step);
  const keep = new Set(latest.values());
  for (const step of steps) step.current = keep.has(step);
}

/** A gate fails when any current step failed or is invalid; passes when every current step passed or only informs. */
function statusOf(all: readonly GateStep[]): GateStatus {
  const steps = all.filter((s) => s.current);
  if (steps.length === 0) return "not-recorded";
  if (steps.some((s) => s.verdict.status === "fail" || s.verdict.status === "invalid")) return "fail";
  return steps.some((s) => s.verdict.status === "pass") ? "pass" : "info";
}

const byTime = (a: GateStep, b: GateStep) =>
  a.startedAt < b.startedAt ? -1 : a.startedAt > b.startedAt ? 1 : a.record.relativePath < b.record.relativePath ? -1 : a.record.relativePath > b.record.relativePath ? 1 : 0;

/**
 * The per-gate index of `records` (other stacks' records and earlier indexes are left out). Steps
 * about an engine name its host when `engineHosts` knows it.
 */
export function deploymentRecord(stack: string, records: readonly StoredRecord[], engineHosts: EngineHosts = {}): DeploymentRecord {
  const steps = records.filter((r) => r.record.kind !== DEPLOYMENT_RECORD_KIND && r.record.stack === stack).map((r) => stepOf(r, engineHosts));
  markSuperseded(steps);
  return {
    stack,
    sourceRevisions: [...new Set(steps.map((s) => s.sourceRevision))].sort(),
    gates: GATES.map(({ gate, title }) => {
      const own = steps.filter((s) => gateOfKind(s.kind) === gate).sort(byTime);
      return { gate, title, status: statusOf(own), steps: own };
    }),
    unassigned: steps.filter((s) => gateOfKind(s.kind) === undefined).sort(byTime),
  };
}

/**
 * One line per gate for the export command's output: its status and, when it fails, the current steps
 * that failed it (a trial point names its trial verdict), so `slo-miss` is seen without opening the file.
 */
export function gateLines(index: DeploymentRecord): string[] {
  return index.gates.map((g) => {
    const failing = g.steps.filter((s) => s.current && (s.verdict.status === "fail" || s.verdict.status === "invalid"));
    const which = failing.map((s) => `${s.kind} ${s.subject}${s.trial ? ` (${s.trial.verdict})` : ""}`);
    return `Gate ${g.gate}: ${g.status}${which.length ? `: ${which.join(", ")}` : ""}`;
  });
}

/**
 * The index as a store record. Its times are those of the last step, so the same evidence always gives
 * the same record (and digest) however often it is exported. Its verdict fails with the failed gates,
 * and otherwise informs, naming the gates the store holds nothing for.
 */
export function deploymentRecordEvidence(index: DeploymentRecord, sourceRevision: string): EvidenceRecord {
  const all = [...index.gates.flatMap((g) => g.steps), ...index.unassigned];
  if (all.length === 0) throw new Error(`stack ${index.stack} has no evidence records to put in a deployment record`);
  const last = all.map((s) => s.endedAt).sort().at(-1)!;
  const failed = index.gates.filter((g) => g.status === "fail").map((g) => `Gate ${g.gate} failed: ${g.title}`);
  const missing = index.gates.filter((g) => g.status === "not-recorded").map((g) => `Gate ${g.gate} has no evidence record`);
  return evidenceRecord({
    kind: DEPLOYMENT_RECORD_KIND,
    subject: { kind: "fleet", alias: index.stack },
    stack: index.stack,
    inputs: Object.fromEntries(all.map((s) => [s.record.relativePath, s.record.digest])),
    commands: [],
    startedAt: last,
    endedAt: last,
    sourceRevision,
    observations: index as never,
    verdict: failed.length ? { status: "fail", reasons: [...failed, ...missing] } : { status: "info", reasons: missing },
    artifacts: [],
  });
}

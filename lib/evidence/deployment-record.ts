/**
 * The runbook's deployment record: "for every gate, retain host or stable host alias; full source
 * revision; starting state; commands executed; exit status; generated artifacts and paths". Each
 * evidence record already carries those fields for one measurement; this gathers them per gate into one
 * index, which is itself stored as a `deployment-record` record so it is as immutable as what it lists.
 */
import { GATES, gateOfKind, type GateId } from "./gates";
import { evidenceRecord, type EvidenceHttp, type EvidenceRecord, type EvidenceVerdict } from "./record";
import { LOAD_TRIAL_KIND, trialStep, type TrialStepSummary } from "./trial-step";
import { reservationReasons } from "../engine/reservation";

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
  /** HTTP requests to an engine, sidecar or router, by alias; repeats are one command with a count. */
  http?: EvidenceHttp;
  /** With `http`: how many requests saw each status (`none`: no answer). */
  httpStatuses?: Record<string, number>;
  /** A process's exit status; for `http`, 0 when every answer was 2xx, 1 otherwise, null when one got none. */
  exitStatus: number | null;
  signal?: string;
}

/** The revisions a step was taken with. */
export interface StepRevisions {
  /** This program's source revision (revision.ts). */
  program: string;
  /**
   * The Narwhal revision installed (the install marker's `revision`) on the step's hosts, for the steps
   * that run Narwhal code or are judged by it ({@link NARWHAL_KINDS}); null for the others, and when no
   * install record is in the store. Distinct revisions on the step's hosts are listed comma-separated.
   */
  narwhal: string | null;
}

/**
 * Where a step started from. A record that says what it found before it changed anything keeps that
 * (`recorded`); otherwise it is the previous record of the same kind and subject, or nothing before.
 */
export type StartingState =
  | { kind: "recorded"; value: unknown }
  | { kind: "previous-record"; record: { relativePath: string; digest: string; verdict: EvidenceVerdict["status"]; endedAt: string } }
  | { kind: "nothing-before"; note: string };

/** One measurement within a gate. */
export interface GateStep {
  kind: string;
  /** `host sim1`, `engine e0`, `edge sim1->sim2`, `fleet dev`. */
  subject: string;
  /**
   * Every host alias the step touched: its subject's hosts, the hosts its commands ran on, and for a
   * fleet-wide judgement the hosts it compared (`inputs.hosts`).
   */
  hosts: string[];
  sourceRevision: string;
  revisions: StepRevisions;
  startingState: StartingState;
  commands: StepCommand[];
  artifacts: Array<{ name: string; path: string; sha256: string; bytes: number }>;
  /** For a trial point (`load-trial`), decided by the trial's own verdict: see trial-step.ts. */
  verdict: EvidenceVerdict;
  /** A trial point's id, offered rate and trial verdict. */
  trial?: TrialStepSummary;
  /**
   * Why the step passed only in part (a preflight whose observations say `degraded`, a probe whose
   * engines served other requests during it): its gate is `degraded`.
   */
  degraded?: string[];
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

/**
 * `degraded`: every current step passed, but one passed only in part (a preflight that skipped checks, a
 * probe taken beside other traffic);
 * `not-recorded`: the store holds no record of the gate (it has not run, or it keeps no store record).
 */
export type GateStatus = "pass" | "degraded" | "fail" | "info" | "not-recorded";

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

/**
 * The hosts a fleet-wide judgement compared without running anything on them (the replica check), as it
 * names them in `inputs.hosts`; none for other records.
 */
function judgedHosts(record: EvidenceRecord): string[] {
  const hosts = record.subject.kind === "fleet" ? record.inputs.hosts : undefined;
  return Array.isArray(hosts) && hosts.every((h) => typeof h === "string") ? hosts : [];
}

function hostsOf(record: EvidenceRecord, engineHosts: EngineHosts): string[] {
  const { kind, alias } = record.subject;
  const fromSubject = kind === "host" ? [alias] : kind === "edge" ? alias.split("->") : kind === "engine" && engineHosts[alias] ? [engineHosts[alias]] : judgedHosts(record);
  // `local` is the machine running Pulumi (an HTTP request's origin), not a host of the fleet.
  return [...new Set([...fromSubject, ...record.commands.map((c) => c.host).filter((h) => h !== LOCAL_HOST)])].sort();
}

/** How a record names the machine running Pulumi among the hosts its commands ran on. */
const LOCAL_HOST = "local";

/** Kinds whose steps run Narwhal code or are judged by it: their revisions name the Narwhal installed. */
export const NARWHAL_KINDS: ReadonlySet<string> = new Set(["install", "attestation", "profile", "profile-store", "preflight", "calibration", "router", "load-trial"]);
/** The kind whose record's `observations.marker.revision` is the Narwhal revision installed on its host. */
export const INSTALL_KIND = "install";

const obj = (v: unknown): Record<string, unknown> | undefined => (v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined);

/** The preflight's own word on a partial run: observations.status `degraded`, with what it skipped. */
function preflightDegraded(record: EvidenceRecord): string[] {
  if (record.kind !== "preflight") return [];
  const o = obj(record.observations);
  if (o?.status !== "degraded") return [];
  const skipped = Array.isArray(o.skipped) ? o.skipped.map(obj).filter((x) => x !== undefined) : [];
  const reasons = skipped.map((x) => `${String(x.gate ?? "a gate")} skipped: ${String(x.message ?? "no reason given")}`);
  return reasons.length ? reasons : record.verdict.reasons.length ? [...record.verdict.reasons] : ["preflight status degraded"];
}

/**
 * Why a passing step passed only in part: a degraded preflight, or a probe (fabric edge, profile,
 * calibration) whose engines served other traffic during it, so its figures are not the idle figures the
 * runbook reserves the engines for (lib/engine/reservation.ts).
 */
function degradedOf(record: EvidenceRecord): string[] | undefined {
  const reasons = [...preflightDegraded(record), ...(reservationReasons(record.observations) ?? [])];
  return reasons.length ? reasons : undefined;
}

function stepOf({ relativePath, digest, record }: StoredRecord, engineHosts: EngineHosts): GateStep {
  const judged = record.kind === LOAD_TRIAL_KIND ? trialStep(record.subject.alias, record.observations, record.verdict) : { verdict: record.verdict };
  const degraded = degradedOf(record);
  return {
    kind: record.kind,
    subject: `${record.subject.kind} ${record.subject.alias}`,
    hosts: hostsOf(record, engineHosts),
    sourceRevision: record.sourceRevision,
    revisions: { program: record.sourceRevision, narwhal: null },
    startingState: record.startingState === undefined ? { kind: "nothing-before", note: "" } : { kind: "recorded", value: record.startingState },
    commands: record.commands.map((c) => ({
      host: c.host,
      ...(c.argv ? { argv: c.argv } : {}),
      ...(c.scriptSha256 ? { scriptSha256: c.scriptSha256 } : {}),
      ...(c.http ? { http: c.http, httpStatuses: c.httpStatuses ?? {} } : {}),
      exitStatus: c.exitStatus,
      ...(c.signal ? { signal: c.signal } : {}),
    })),
    artifacts: record.artifacts.map((a) => ({ name: a.name, path: a.relativePath, sha256: a.sha256, bytes: a.bytes })),
    ...judged,
    ...(degraded ? { degraded } : {}),
    startedAt: record.startedAt,
    endedAt: record.endedAt,
    record: { relativePath, digest },
    current: true,
  };
}

/**
 * Marks every step but the last of each kind and subject as superseded, and gives each step that
 * recorded no starting state of its own the one before it: the previous record of its kind and subject.
 */
function markSuperseded(steps: GateStep[]): void {
  const latest = new Map<string, GateStep>();
  for (const step of [...steps].sort(byTime)) {
    const key = `${step.kind}\0${step.subject}`;
    const before = latest.get(key);
    if (step.startingState.kind !== "recorded") {
      step.startingState = before
        ? { kind: "previous-record", record: { relativePath: before.record.relativePath, digest: before.record.digest, verdict: before.verdict.status, endedAt: before.endedAt } }
        : { kind: "nothing-before", note: `no earlier ${step.kind} record of ${step.subject} in this stack's evidence store` };
    }
    latest.set(key, step);
  }
  const keep = new Set(latest.values());
  for (const step of steps) step.current = keep.has(step);
}

/** Host alias -> its install records' Narwhal revisions, with when each started. */
type Installs = Map<string, Array<{ startedAt: string; revision: string }>>;

function installsOf(records: readonly StoredRecord[]): Installs {
  const out: Installs = new Map();
  for (const { record } of records) {
    if (record.kind !== INSTALL_KIND || record.subject.kind !== "host") continue;
    const revision = obj(obj(record.observations)?.marker)?.revision;
    if (typeof revision !== "string" || revision === "") continue;
    const list = out.get(record.subject.alias) ?? [];
    list.push({ startedAt: record.startedAt, revision });
    out.set(record.subject.alias, list.sort((a, b) => (a.startedAt < b.startedAt ? -1 : 1)));
  }
  return out;
}

/**
 * The Narwhal revision a step ran with: on each of its hosts (every install host for a fleet-wide step),
 * the latest install begun before the step ended, else the earliest one.
 */
function narwhalRevision(step: GateStep, installs: Installs): string | null {
  if (!NARWHAL_KINDS.has(step.kind)) return null;
  const hosts = step.hosts.filter((h) => installs.has(h));
  const seen = new Set<string>();
  for (const host of hosts.length ? hosts : [...installs.keys()]) {
    const list = installs.get(host)!;
    seen.add((list.filter((x) => x.startedAt <= step.endedAt).at(-1) ?? list[0]).revision);
  }
  return seen.size ? [...seen].sort().join(", ") : null;
}

/**
 * A gate fails when any current step failed or is invalid; is degraded when a current step passed only
 * in part; passes when every current step passed or only informs.
 */
function statusOf(all: readonly GateStep[]): GateStatus {
  const steps = all.filter((s) => s.current);
  if (steps.length === 0) return "not-recorded";
  if (steps.some((s) => s.verdict.status === "fail" || s.verdict.status === "invalid")) return "fail";
  if (steps.some((s) => s.degraded !== undefined)) return "degraded";
  return steps.some((s) => s.verdict.status === "pass") ? "pass" : "info";
}

const byTime = (a: GateStep, b: GateStep) =>
  a.startedAt < b.startedAt ? -1 : a.startedAt > b.startedAt ? 1 : a.record.relativePath < b.record.relativePath ? -1 : a.record.relativePath > b.record.relativePath ? 1 : 0;

/**
 * The per-gate index of `records` (other stacks' records and earlier indexes are left out). Steps
 * about an engine name its host when `engineHosts` knows it.
 */
export function deploymentRecord(stack: string, records: readonly StoredRecord[], engineHosts: EngineHosts = {}): DeploymentRecord {
  const own = records.filter((r) => r.record.kind !== DEPLOYMENT_RECORD_KIND && r.record.stack === stack);
  const steps = own.map((r) => stepOf(r, engineHosts));
  markSuperseded(steps);
  const installs = installsOf(own);
  for (const step of steps) step.revisions.narwhal = narwhalRevision(step, installs);
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
    const failing = g.steps.filter((s) => s.current && (s.verdict.status === "fail" || s.verdict.status === "invalid" || (g.status === "degraded" && s.degraded)));
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
  const missing = [
    ...index.gates.filter((g) => g.status === "degraded").map((g) => `Gate ${g.gate} is degraded: ${g.steps.flatMap((s) => (s.current ? (s.degraded ?? []) : [])).join("; ")}`.slice(0, 4000)),
    ...index.gates.filter((g) => g.status === "not-recorded").map((g) => `Gate ${g.gate} has no evidence record`),
  ];
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

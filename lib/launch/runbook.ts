/**
 * Engines the runbook's launcher (narwhal-inference's `launch_engine`, `prepare`/`check`/`start --run`)
 * already runs: whether one is this program's engine and may be adopted instead of restarted.
 *
 * The launcher's launch directory (`ENGINE_RUN`) records `launch.json` (the serving plan: `args`,
 * `endpoint`, `model_dir`/`model_path`, `image`, …), `checked.json` (its `plan_sha256`, the SHA-256 of
 * launch.json's bytes, and the checked `image_id`), then `native-process.json` (`{pid, boot_id,
 * start_ticks}`: a process-group leader) or `container.id` (a container labelled
 * `io.narwhal.launch=<docker-owner.json label>`), and the private env file (`engine.env` or
 * `container.env`, with the API key).
 *
 * The launcher's plan hash covers its own record (revision, launcher digests, a random container
 * name), so it never equals this program's `planSha256`. What must be equal is what the engine serves:
 * model, endpoint, every serving flag (values of JSON flags compared as JSON), the environment this
 * program sets, and for containers the image. Only the bind address (`--host`: the launcher binds
 * containers to every address) is left out; the endpoint covers where the engine is reached.
 */
import { createHash } from "node:crypto";
import { canonicalJson } from "../digest";
import type { LaunchPlan } from "./plan";
import type { RunbookAttestationSource } from "../attestation/runbook-document";

/** What the survey script (lib/runtime/runbook-survey.ts) saw in the launch directory and on the host. */
export interface RunbookSurvey {
  /** The launch directory, as configured. */
  readonly run: string;
  /** base64 of launch.json; absent when the folder holds none. */
  readonly launchJson?: string;
  /** base64 of checked.json. */
  readonly checkedJson?: string;
  /** base64 of native-process.json (native launches). */
  readonly processJson?: string;
  /** The recorded pid as /proc shows it now; absent when no such process runs. */
  readonly live?: {
    readonly pid: number;
    readonly pgid: number;
    readonly startTicks: number;
    readonly bootId: string;
    /** /proc/stat `btime` and the clock tick rate: the process started at btime + startTicks / clockTicks. */
    readonly btime?: number;
    readonly clockTicks?: number;
  };
  /** base64 of engine-attestation.json: the document the runbook's sidecar served. */
  readonly attestationJson?: string;
  /** container.id (container launches). */
  readonly containerId?: string;
  /** base64 of docker-owner.json: the launcher's ownership label. */
  readonly ownerJson?: string;
  /** `docker inspect` of the recorded container; absent when the daemon has no such container. */
  readonly container?: { readonly running: boolean; readonly image: string; readonly ownerLabel: string; readonly startedAt: string };
  /** Only the environment keys the program asked for (never a secret's). */
  readonly env: Readonly<Record<string, string>>;
}

/** What this program would run, beyond its launch plan. */
export interface ProgramLaunch {
  readonly plan: LaunchPlan;
  /** Containers: the immutable image (`sha256:` ID or registry digest) the program runs. */
  readonly image?: string;
}

export interface PlanDifference {
  /** `model`, `endpoint`, `image`, `argv --<flag>` or `env <NAME>`. */
  readonly field: string;
  readonly runbook: string;
  readonly program: string;
}

export type RunbookIdentity =
  | { readonly pid: number; readonly startTicks: number; readonly bootId: string }
  | { readonly containerId: string };

export type RunbookDecision =
  /** Nothing of the runbook's runs: the program starts its engine. */
  | { readonly action: "start"; readonly reason: string }
  /** The running engine serves the program's plan: keep it, bind the program's evidence to it. */
  | { readonly action: "adopt"; readonly identity: RunbookIdentity; readonly runbookPlanSha256: string; readonly reason: string }
  /** A runbook engine runs, but not this plan (or its record cannot be trusted): stop it, start the program's. */
  | { readonly action: "replace"; readonly identity: RunbookIdentity; readonly reason: string; readonly differences: ReadonlyArray<PlanDifference> };

/** Environment names that may carry a secret: never read from the launcher's env file. */
const SECRET_WORDS = ["PASSWORD", "TOKEN", "SECRET", "API_KEY", "SSH"];
const VISIBILITY = ["CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"];

/** The env keys the survey reads from the launcher's env file: the program's own keys and GPU visibility. */
export function surveyEnvKeys(plan: LaunchPlan): string[] {
  const keys = [...new Set([...Object.keys(plan.env), ...VISIBILITY])].sort();
  for (const k of keys) {
    if (!/^[A-Z_][A-Z0-9_]*$/.test(k)) throw new Error(`runbook survey: environment name ${JSON.stringify(k)} of engine ${plan.engineId}'s plan is not a plain name`);
  }
  return keys.filter((k) => !SECRET_WORDS.some((w) => k.includes(w)));
}

function decode(b64: string | undefined): string | undefined {
  return b64 === undefined ? undefined : Buffer.from(b64, "base64").toString("utf8");
}

function parseObject(text: string, what: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new Error(`${what} is not JSON: ${(e as Error).message}`);
  }
  if (!v || typeof v !== "object" || Array.isArray(v)) throw new Error(`${what} is not a JSON object`);
  return v as Record<string, unknown>;
}

/** Serving flags of an argv after its command: `--flag value` or a bare `--flag` (value "true"). */
export function servingFlags(args: ReadonlyArray<string>): Map<string, string> {
  const flags = new Map<string, string>();
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (!a.startsWith("--")) continue;
    const eq = a.indexOf("=");
    if (eq > 0) {
      flags.set(a.slice(0, eq), a.slice(eq + 1));
      continue;
    }
    const next = args[i + 1];
    if (next !== undefined && !next.startsWith("--")) {
      flags.set(a, next);
      i++;
    } else {
      flags.set(a, "true");
    }
  }
  return flags;
}

/** JSON values compare as JSON (key order and spacing differ between Python's and ours). */
function canonicalValue(v: string): string {
  if (!/^[[{]/.test(v.trim())) return v;
  try {
    return canonicalJson(JSON.parse(v));
  } catch {
    return v;
  }
}

/** Where each side binds or names these, they are compared as `model`/`endpoint` instead. */
const NOT_FLAGS = new Set(["--model", "--host", "--port"]);

function programFields(p: ProgramLaunch): Map<string, string> {
  const [, , model, ...rest] = p.plan.argv;
  const out = new Map<string, string>([["model", model ?? ""], ["endpoint", p.plan.url.replace(/\/+$/, "")]]);
  for (const [f, v] of servingFlags(rest)) if (!NOT_FLAGS.has(f)) out.set(`argv ${f}`, canonicalValue(v));
  return out;
}

function runbookFields(plan: Record<string, unknown>): Map<string, string> {
  const args = plan.args;
  if (!Array.isArray(args) || args.some((a) => typeof a !== "string")) throw new Error("launch.json has no argument list `args`");
  const flags = servingFlags(args as string[]);
  const native = plan.backend === "native";
  // The container mounts model_dir at /model; a native engine loads model_path itself.
  const model = native ? plan.model_path : plan.model_dir;
  const out = new Map<string, string>([["model", String(model ?? flags.get("--model") ?? "")], ["endpoint", String(plan.endpoint ?? "").replace(/\/+$/, "")]]);
  for (const [f, v] of flags) if (!NOT_FLAGS.has(f)) out.set(`argv ${f}`, canonicalValue(v));
  return out;
}

/** Every field that differs, named; an empty list means the runbook's engine serves the program's plan. */
export function planDifferences(program: ProgramLaunch, runbookPlan: Record<string, unknown>, runbookEnv: Readonly<Record<string, string>>, checkedImageId?: string): PlanDifference[] {
  const ours = programFields(program);
  const theirs = runbookFields(runbookPlan);
  const diffs: PlanDifference[] = [];
  const unset = "(unset)";
  for (const field of [...new Set([...ours.keys(), ...theirs.keys()])]) {
    const a = theirs.get(field) ?? unset;
    const b = ours.get(field) ?? unset;
    if (a !== b) diffs.push({ field, runbook: a, program: b });
  }
  for (const k of surveyEnvKeys(program.plan)) {
    const a = runbookEnv[k] ?? unset;
    const b = program.plan.env[k] ?? unset;
    if (a !== b) diffs.push({ field: `env ${k}`, runbook: a, program: b });
  }
  if (program.image !== undefined) {
    const theirImage = String(runbookPlan.image ?? "");
    // The launcher's check resolved its image to an ID: either form of the program's image may match.
    if (theirImage !== program.image && checkedImageId !== program.image) diffs.push({ field: "image", runbook: theirImage || unset, program: program.image });
  }
  return diffs;
}

export function describeDifferences(diffs: ReadonlyArray<PlanDifference>): string {
  const show = (v: string) => (v.length > 80 ? `${v.slice(0, 77)}...` : v);
  return diffs.map((d) => `${d.field} is ${show(d.runbook)} there, ${show(d.program)} here`).join("; ");
}

function sha256Hex(text: string): string {
  return createHash("sha256").update(Buffer.from(text, "utf8")).digest("hex");
}

function describeIdentity(id: RunbookIdentity): string {
  return "containerId" in id ? `container ${id.containerId.slice(0, 12)}` : `pid ${id.pid}`;
}

/** The live engine the launch directory records, or why there is none. */
function liveIdentity(s: RunbookSurvey, plan: Record<string, unknown>): { identity: RunbookIdentity } | { none: string } | { untrusted: RunbookIdentity; why: string } {
  if (plan.backend === "native") {
    const text = decode(s.processJson);
    if (text === undefined) return { none: "its launch directory records no native process (native-process.json)" };
    const rec = parseObject(text, `${s.run}/native-process.json`);
    const pid = Number(rec.pid);
    if (!s.live || s.live.pid !== pid) return { none: `its recorded process ${pid} no longer runs` };
    const identity = { pid, startTicks: s.live.startTicks, bootId: s.live.bootId };
    // A pid is reused after exit: the start time and boot id say whether it is still the launched process.
    if (rec.start_ticks !== s.live.startTicks || rec.boot_id !== s.live.bootId) return { none: `pid ${pid} is another process now (start ticks or boot id differ from native-process.json)` };
    if (s.live.pgid !== pid) return { untrusted: identity, why: `pid ${pid} no longer leads its process group` };
    return { identity };
  }
  if (!s.containerId) return { none: "its launch directory records no container (container.id)" };
  if (!s.container) return { none: `its container ${s.containerId.slice(0, 12)} no longer exists` };
  if (!s.container.running) return { none: `its container ${s.containerId.slice(0, 12)} is not running` };
  const identity = { containerId: s.containerId };
  const owner = decode(s.ownerJson);
  const label = owner === undefined ? undefined : parseObject(owner, `${s.run}/docker-owner.json`).label;
  if (label === undefined || s.container.ownerLabel !== label) {
    return { untrusted: identity, why: `container ${s.containerId.slice(0, 12)} does not carry the launch directory's ownership label io.narwhal.launch=${String(label)}` };
  }
  return { identity };
}

/**
 * What the launch directory says before any plan is compared: nothing of it runs (`absent`), a live
 * engine whose record cannot be trusted (`untrusted`), or a live engine running the plan the
 * launcher's check covered (`running`). Each reason starts with the directory.
 */
export type RunbookStanding =
  | { readonly kind: "absent"; readonly reason: string }
  | { readonly kind: "untrusted"; readonly identity: RunbookIdentity; readonly reason: string }
  | { readonly kind: "running"; readonly identity: RunbookIdentity; readonly plan: Record<string, unknown>; readonly planSha256: string; readonly checkedImageId?: string; readonly where: string };

export function runbookStanding(s: RunbookSurvey): RunbookStanding {
  const where = `runbook launch ${s.run}`;
  const launchText = decode(s.launchJson);
  if (launchText === undefined) return { kind: "absent", reason: `${where} holds no launch.json` };
  const plan = parseObject(launchText, `${s.run}/launch.json`);
  const live = liveIdentity(s, plan);
  if ("none" in live) return { kind: "absent", reason: `${where}: ${live.none}` };
  if ("untrusted" in live) return { kind: "untrusted", identity: live.untrusted, reason: `${where}: ${live.why}` };
  const at = `${where} (${describeIdentity(live.identity)})`;
  const planSha256 = sha256Hex(launchText);
  const checkedText = decode(s.checkedJson);
  const checked = checkedText === undefined ? undefined : parseObject(checkedText, `${s.run}/checked.json`);
  if (!checked || checked.plan_sha256 !== planSha256) {
    const why = checked ? `checked.json binds plan ${String(checked.plan_sha256)}, but launch.json hashes to ${planSha256}` : "it has no checked.json (the launcher's check never passed)";
    return { kind: "untrusted", identity: live.identity, reason: `${at}: ${why}` };
  }
  const checkedImageId = typeof checked.image_id === "string" ? checked.image_id : undefined;
  return { kind: "running", identity: live.identity, plan, planSha256, checkedImageId, where: at };
}

/**
 * Decides, from what the survey saw, whether the runbook's engine stays (adopt), goes (replace, with
 * the reason naming every differing field), or was never there (start).
 */
export function decideRunbookAdoption(program: ProgramLaunch, s: RunbookSurvey): RunbookDecision {
  const standing = runbookStanding(s);
  if (standing.kind === "absent") return { action: "start", reason: `${standing.reason}; starting the program's engine` };
  if (standing.kind === "untrusted") return { action: "replace", identity: standing.identity, differences: [], reason: `${standing.reason}; replacing it` };
  const { identity, planSha256, where } = standing;
  const differences = planDifferences(program, standing.plan, s.env, standing.checkedImageId);
  if (differences.length > 0) {
    return { action: "replace", identity, differences, reason: `${where} runs another plan than engine ${program.plan.engineId}'s: ${describeDifferences(differences)}; replacing it` };
  }
  return { action: "adopt", identity, runbookPlanSha256: planSha256, reason: `${where} serves engine ${program.plan.engineId}'s plan (runbook plan sha256 ${planSha256}); adopted without a restart` };
}

/**
 * The runbook sidecar's document of an adopted engine, with the start of the process the runbook
 * launched (lib/attestation/runbook-document.ts decides whether it is still served); undefined when the
 * engine was not adopted or the launch directory holds no document.
 */
export function runbookAttestationOf(d: RunbookDecision, s: RunbookSurvey): RunbookAttestationSource | undefined {
  const text = decode(s.attestationJson);
  if (d.action !== "adopt" || text === undefined) return undefined;
  const processStartS = "containerId" in d.identity ? containerStartS(s) : nativeStartS(s);
  return processStartS === undefined ? undefined : { run: s.run, text, processStartS };
}

function nativeStartS(s: RunbookSurvey): number | undefined {
  const live = s.live;
  return live && live.btime !== undefined && live.clockTicks ? live.btime + live.startTicks / live.clockTicks : undefined;
}

/** The container's start: its entrypoint is the engine process (`--entrypoint python3`), started with it. */
function containerStartS(s: RunbookSurvey): number | undefined {
  const ms = s.container ? Date.parse(s.container.startedAt) : NaN;
  return Number.isFinite(ms) ? ms / 1000 : undefined;
}

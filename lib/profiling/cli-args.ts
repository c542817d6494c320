/**
 * The command line of `npm run profile` (narwhal-profile's options and their checks, in its order and
 * words): which mode runs, and every value it runs with. Warm-prefix options are absent: this program
 * profiles with prefix caching off.
 */
import { parseArgs } from "node:util";
import { workloadProblem, type ColocatedWorkload } from "./neighbours";
import { DEFAULT_SWEEP, type Sweep } from "./sweep";

export class UsageError extends Error {
  override name = "UsageError";
}

export type ProfileCommand =
  | { mode: "merge"; fleet: string; merge: string[]; out: string }
  | { mode: "refit"; fleet: string; refitSamples: string; out: string }
  | { mode: "live"; fleet: string; only: string[]; overwrite: boolean; limits?: string; sweep: Sweep; colocated?: ColocatedWorkload; observationTimeoutS?: number };

export const USAGE =
  "usage: npm run profile -- --fleet PATH [--only IID]... [--overwrite] [--limits PATH] [--prefill-lens LIST] [--decode-input-lens LIST] " +
  "[--decode-concurrency LIST] [--decode-tokens N] [--prefill-repeats N] [--decode-repeats N] [--observation-timeout-s S] " +
  "[--colocated --neighbour-prefill-rps RATE --neighbour-decode-rps RATE --neighbour-prefill-tokens N --neighbour-decode-input-tokens N --neighbour-decode-output-tokens N] " +
  "| --fleet PATH --refit-samples PATH --out PATH | --fleet PATH --merge PATH --merge PATH... --out PATH";

const VALUED = [
  "fleet", "only", "refit-samples", "merge", "out", "limits", "observation-timeout-s", "prefill-lens", "decode-concurrency", "decode-input-lens",
  "decode-tokens", "decode-repeats", "prefill-repeats", "neighbour-prefill-rps", "neighbour-decode-rps", "neighbour-prefill-tokens",
  "neighbour-decode-input-tokens", "neighbour-decode-output-tokens",
];
const FLAGS = ["overwrite", "colocated"];
const REPEATABLE = new Set(["only", "merge"]);
type OptionSpec = { type: "string" | "boolean"; multiple?: boolean };
const OPTIONS: Record<string, OptionSpec> = Object.fromEntries<OptionSpec>([
  ...VALUED.map((k) => [k, { type: "string" as const, ...(REPEATABLE.has(k) ? { multiple: true } : {}) }] as const),
  ...FLAGS.map((k) => [k, { type: "boolean" as const }] as const),
]);

/** argparse takes `-5` and `-.5` as values, not options (its negative-number rule); node's parseArgs wants them joined with `=`. */
const NEGATIVE_NUMBER = /^-\d+$|^-\d*\.\d+$/;

/** node:util's parseArgs over argv, its refusals worded as narwhal-profile's argparse words them. */
function tokenize(argv: readonly string[]): { values: Map<string, string[]>; flags: Set<string> } {
  const args: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = argv[i + 1];
    if (VALUED.includes(a.replace(/^--/, "")) && a.startsWith("--") && next !== undefined && NEGATIVE_NUMBER.test(next)) args.push(`${a}=${argv[++i]}`);
    else args.push(a);
  }
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args, options: OPTIONS, strict: true, allowPositionals: false });
  } catch (err) {
    const { code, message } = err as { code?: string; message: string };
    const flag = /'(-[^' ]+)/.exec(message)?.[1] ?? "";
    const given = args.find((a) => a === flag || a.startsWith(`${flag}=`));
    if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") throw new UsageError(`unrecognized arguments: ${given ?? flag}`);
    if (code === "ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL") throw new UsageError(`unrecognized arguments: ${/'([^']*)'/.exec(message)?.[1] ?? ""}`);
    if (code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE") {
      if (FLAGS.includes(flag.slice(2))) throw new UsageError(`argument ${flag}: ignored explicit argument '${given?.slice(flag.length + 1) ?? ""}'`);
      throw new UsageError(`argument ${flag}: expected one argument`);
    }
    throw err;
  }
  const values = new Map<string, string[]>();
  const flags = new Set<string>();
  for (const [name, v] of Object.entries(parsed.values)) {
    if (typeof v === "boolean") {
      if (v) flags.add(name);
    } else if (v !== undefined) values.set(name, (Array.isArray(v) ? v : [v]).map(String));
  }
  return { values, flags };
}

/** Python's `int()` on a command-line value: an optional sign and digits, spaces around allowed. */
function int(name: string, text: string): number {
  if (!/^\s*[+-]?\d+\s*$/.test(text)) throw new UsageError(`argument --${name}: invalid int value: '${text}'`);
  return Number(text);
}
function float(name: string, text: string): number {
  const t = text.trim().toLowerCase();
  const v = t === "inf" || t === "+inf" || t === "infinity" ? Infinity : t === "-inf" ? -Infinity : t === "nan" ? NaN : /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/.test(t) ? Number(t) : undefined;
  if (v === undefined) throw new UsageError(`argument --${name}: invalid float value: '${text}'`);
  return v;
}
/** narwhal's `_int_list`: comma-separated integers, blank items skipped. */
function intList(text: string): number[] | undefined {
  const items = text.split(",").filter((s) => s.trim());
  return items.every((s) => /^\s*[+-]?\d+\s*$/.test(s)) ? items.map(Number) : undefined;
}

export function parseProfileArgs(argv: readonly string[]): ProfileCommand {
  const { values, flags } = tokenize(argv);
  const one = (k: string) => values.get(k)?.[0];
  const fleet = one("fleet");
  if (fleet === undefined) throw new UsageError("the following arguments are required: --fleet");
  const observation = one("observation-timeout-s") !== undefined ? float("observation-timeout-s", one("observation-timeout-s")!) : undefined;
  if (observation !== undefined && !(Number.isFinite(observation) && observation > 0)) throw new UsageError("--observation-timeout-s must be finite and positive");
  const merge = values.get("merge") ?? [];
  const refit = one("refit-samples");
  if (observation !== undefined && (merge.length || refit !== undefined)) throw new UsageError("--observation-timeout-s applies only to live profiling");

  const lists = ["prefill-lens", "decode-concurrency", "decode-input-lens"].map((k) => (one(k) === undefined ? undefined : intList(one(k)!)));
  if (lists.some((l, i) => l === undefined && one(["prefill-lens", "decode-concurrency", "decode-input-lens"][i]) !== undefined)) {
    throw new UsageError("--prefill-lens, --decode-input-lens and --decode-concurrency take comma-separated integers");
  }
  const num = (k: string, d: number) => (one(k) === undefined ? d : int(k, one(k)!));
  const sweep: Sweep = {
    prefillLens: lists[0] ?? [...DEFAULT_SWEEP.prefillLens],
    decodeConcurrency: lists[1] ?? [...DEFAULT_SWEEP.decodeConcurrency],
    decodeInputLens: lists[2] ?? [...DEFAULT_SWEEP.decodeInputLens],
    decodeTokens: num("decode-tokens", DEFAULT_SWEEP.decodeTokens),
    decodeRepeats: num("decode-repeats", DEFAULT_SWEEP.decodeRepeats),
    prefillRepeats: num("prefill-repeats", DEFAULT_SWEEP.prefillRepeats),
  };
  // Sweep values are checked before a mode is chosen, whichever mode runs.
  if (new Set(sweep.prefillLens).size < 3) throw new UsageError("the sweep needs at least three distinct prefill lengths");
  if (new Set(sweep.decodeInputLens).size < 2 || new Set(sweep.decodeConcurrency).size < 2) throw new UsageError("the decode fit needs two distinct input lengths and two distinct concurrency steps");
  if ([...sweep.prefillLens, ...sweep.decodeInputLens].some((v) => v <= 0)) throw new UsageError("profile lengths must be positive");
  if (sweep.decodeConcurrency.some((v) => v < 1)) throw new UsageError("decode concurrency must be at least 1");
  if (sweep.decodeTokens < 3 || sweep.prefillRepeats < 3 || sweep.decodeRepeats < 1) {
    throw new UsageError("--decode-tokens needs at least 3 (two intervals need three tokens); --prefill-repeats at least 3 for a repeat median; --decode-repeats at least 1");
  }

  const neighbour = {
    prefillRps: one("neighbour-prefill-rps") === undefined ? undefined : float("neighbour-prefill-rps", one("neighbour-prefill-rps")!),
    decodeRps: one("neighbour-decode-rps") === undefined ? undefined : float("neighbour-decode-rps", one("neighbour-decode-rps")!),
    prefillTokens: one("neighbour-prefill-tokens") === undefined ? undefined : int("neighbour-prefill-tokens", one("neighbour-prefill-tokens")!),
    decodeInputTokens: one("neighbour-decode-input-tokens") === undefined ? undefined : int("neighbour-decode-input-tokens", one("neighbour-decode-input-tokens")!),
    decodeOutputTokens: one("neighbour-decode-output-tokens") === undefined ? undefined : int("neighbour-decode-output-tokens", one("neighbour-decode-output-tokens")!),
  };
  let colocated: ColocatedWorkload | undefined;
  if (flags.has("colocated")) {
    const problem = workloadProblem(neighbour);
    if (problem) throw new UsageError(problem);
    colocated = neighbour as ColocatedWorkload;
  } else if (Object.values(neighbour).some((v) => v !== undefined)) {
    throw new UsageError("neighbour load options require --colocated");
  }

  const only = values.get("only") ?? [];
  const out = one("out");
  const overwrite = flags.has("overwrite");
  if (merge.length) {
    if (refit !== undefined || out === undefined || only.length || overwrite) throw new UsageError("--merge requires --out and cannot combine with refit, only, or overwrite");
    if (merge.length < 2) throw new UsageError("--merge needs at least two measured profile stores");
    return { mode: "merge", fleet, merge, out };
  }
  if (refit !== undefined || out !== undefined) {
    if (refit === undefined || out === undefined || only.length) throw new UsageError("--refit-samples requires --out and a complete fleet selection");
    return { mode: "refit", fleet, refitSamples: refit, out };
  }
  return { mode: "live", fleet, only, overwrite, ...(one("limits") !== undefined ? { limits: one("limits") } : {}), sweep, ...(colocated ? { colocated } : {}), ...(observation !== undefined ? { observationTimeoutS: observation } : {}) };
}

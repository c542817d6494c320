/**
 * The command lines of scripts/ and bench/: node:util's `parseArgs` (strict, no positionals), with its
 * errors reworded into one line that names the flag and what it wants, e.g. `--stack needs a value: a
 * stack name`. Each script prints that line and its usage, and exits 2.
 */
import { parseArgs, type ParseArgsConfig } from "node:util";

type Options = NonNullable<ParseArgsConfig["options"]>;
type Values<O extends Options> = ReturnType<typeof parseArgs<{ options: O; strict: true; allowPositionals: false }>>["values"];

export class UsageError extends Error {
  override name = "UsageError";
}

/** What each string flag takes, in words ("a stack name"); used in messages. */
export type Wants<O extends Options> = { readonly [K in keyof O]?: string };

function known(options: Options): string {
  return Object.keys(options)
    .map((k) => `--${k}`)
    .join(", ");
}

function reword(err: unknown, argv: readonly string[], options: Options, wants: Record<string, string | undefined>): string {
  const { code, message } = err as { code?: string; message: string };
  const flag = /'(-[^' ]+)/.exec(message)?.[1] ?? "";
  const name = flag.replace(/^--?/, "");
  switch (code) {
    case "ERR_PARSE_ARGS_UNKNOWN_OPTION":
      return `unknown flag ${flag}; this command takes ${known(options)}`;
    case "ERR_PARSE_ARGS_INVALID_OPTION_VALUE":
      if (options[name]?.type === "boolean") {
        const given = argv.find((a) => a.startsWith(`${flag}=`));
        return `${flag} takes no value${given ? `, got ${JSON.stringify(given.slice(flag.length + 1))}` : ""}`;
      }
      return `${flag} needs a value: ${wants[name] ?? "a value"}`;
    case "ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL": {
      const arg = /'([^']*)'/.exec(message)?.[1] ?? "";
      return `unexpected argument ${JSON.stringify(arg)}: every value follows its flag (${known(options)})`;
    }
    default:
      throw err;
  }
}

function parse<O extends Options>(argv: readonly string[], options: O, wants: Wants<O>, allowPositionals: boolean) {
  const words = wants as Record<string, string | undefined>;
  let parsed: { values: Record<string, string | boolean | Array<string | boolean> | undefined>; positionals: string[] };
  try {
    parsed = parseArgs({ args: [...argv], options, strict: true, allowPositionals });
  } catch (err) {
    throw new UsageError(reword(err, argv, options, words));
  }
  // `--stack=` parses as an empty value; no flag here takes one.
  for (const [name, value] of Object.entries(parsed.values)) {
    if (value === "" || (Array.isArray(value) && value.includes(""))) throw new UsageError(`--${name} needs a value: ${words[name] ?? "a value"}`);
  }
  return { values: parsed.values as Values<O>, positionals: parsed.positionals };
}

/** `argv` parsed against `options`; a bad command line throws a `UsageError` with one line. */
export function parseFlags<O extends Options>(argv: readonly string[], options: O, wants: Wants<O>): Values<O> {
  return parse(argv, options, wants, false).values;
}

/** As `parseFlags`, for a command that also takes words of its own (`router-request.ts <URL>`). */
export function parseFlagsAndWords<O extends Options>(argv: readonly string[], options: O, wants: Wants<O>): { values: Values<O>; positionals: string[] } {
  return parse(argv, options, wants, true);
}

/** A required flag's value, or a `UsageError` saying so. */
export function required<T>(value: T | undefined, flag: string, wants: string): T {
  if (value === undefined) throw new UsageError(`--${flag} is required: ${wants}`);
  return value;
}

/** A positive number flag: `fallback` when absent; else refused naming the flag and what it got. */
export function positiveNumber(flag: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const v = Number(text);
  if (!(text.trim() !== "" && Number.isFinite(v) && v > 0)) throw new UsageError(`--${flag} wants a positive number, got ${JSON.stringify(text)}`);
  return v;
}

/**
 * Runs `parse`; on a `UsageError` prints its line and `usage` to stderr and ends the process with exit
 * code `code` (2 unless a script documents another), before anything else is done.
 */
export function parseOrExit<T>(parse: () => T, usage: string, code = 2): T {
  try {
    return parse();
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`${err.message}\n${usage}\n`);
    process.exit(code);
  }
}

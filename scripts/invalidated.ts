/**
 * `npm run invalidated -- --stack <name> [--json] [--refresh]`: runs a preview of the stack and prints what
 * it would re-measure, re-judge and keep, by gate (lib/report). Exits 2 on bad arguments, 1 if the preview fails.
 */
import { formatSummary } from "../lib/report/format";
import { parseFlags, parseOrExit, required } from "./args";
import { invalidationSummary } from "./stack/preview";

const USAGE = "usage: npm run invalidated -- --stack <name> [--json] [--refresh]";

export function parseInvalidatedArgs(argv: readonly string[]): { stack: string; json: boolean; refresh: boolean } {
  const values = parseFlags(argv, { stack: { type: "string" }, json: { type: "boolean" }, refresh: { type: "boolean" } }, { stack: "a stack name" });
  return { stack: required(values.stack, "stack", "a stack name"), json: values.json ?? false, refresh: values.refresh ?? false };
}

async function main(): Promise<void> {
  const args = parseOrExit(() => parseInvalidatedArgs(process.argv.slice(2)), USAGE);
  try {
    const summary = await invalidationSummary(args.stack, { refresh: args.refresh });
    process.stdout.write(args.json ? JSON.stringify(summary, null, 2) + "\n" : formatSummary(summary));
  } catch (e) {
    // The CLI's own `error:` lines say what went wrong; the Automation API wraps them in its command dump.
    const message = (e as Error).message;
    const errors = [...new Set(message.split("\n").filter((l) => l.startsWith("error:")))];
    process.stderr.write(`preview of stack ${args.stack} failed:\n${errors.length ? errors.join("\n") : message}\n`);
    process.exit(1);
  }
}

if (require.main === module) void main();

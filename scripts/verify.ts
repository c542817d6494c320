/**
 * `npm run verify -- --stack <name> [--json]`: a read-only check that the stack's evidence still holds.
 * Runs `pulumi preview --refresh` (the refresh re-reads every engine, sidecar and host, and nothing is
 * written to state) and exits 0 when nothing would be re-measured, re-judged, created or removed; else
 * prints the invalidation report (lib/report, as `npm run invalidated`) and exits 1. For cron or CI.
 *
 * Exit codes: 0 evidence holds, 1 evidence invalidated (report on stdout), 2 bad arguments, 3 the check
 * itself failed (a host unreachable, a changed host key: the CLI's errors on stderr), which also means
 * the evidence cannot be shown to hold.
 */
import { formatSummary } from "../lib/report/format";
import { parseFlags, required, UsageError } from "./args";
import { invalidationSummary } from "./stack/preview";

const USAGE = "usage: npm run verify -- --stack <name> [--json]";

export function parseVerifyArgs(argv: readonly string[]): { stack: string; json: boolean } {
  const values = parseFlags(argv, { stack: { type: "string" }, json: { type: "boolean" } }, { stack: "a stack name" });
  return { stack: required(values.stack, "stack", "a stack name"), json: values.json ?? false };
}

async function main(): Promise<number> {
  let args;
  try {
    args = parseVerifyArgs(process.argv.slice(2));
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    process.stderr.write(`${e.message}\n${USAGE}\n`);
    return 2;
  }
  let summary;
  try {
    summary = await invalidationSummary(args.stack, { refresh: true });
  } catch (e) {
    const message = (e as Error).message;
    const errors = [...new Set(message.split("\n").filter((l) => l.startsWith("error:")))];
    process.stderr.write(`verify: the refresh of stack ${args.stack} failed, so its evidence cannot be shown to hold:\n${errors.length ? errors.join("\n") : message}\n`);
    return 3;
  }
  process.stdout.write(args.json ? JSON.stringify(summary, null, 2) + "\n" : formatSummary(summary));
  return summary.nothingInvalidated ? 0 : 1;
}

if (require.main === module) void main().then((code) => (process.exitCode = code));

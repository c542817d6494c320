/**
 * `npm run invalidated -- --stack <name> [--json] [--refresh]`: runs a preview of the stack and prints what
 * it would re-measure, re-judge and keep, by gate (lib/report). Exits 2 on bad arguments, 1 if the preview fails.
 */
import { formatSummary } from "../lib/report";
import { invalidationSummary } from "./stack/preview";

const USAGE = "usage: npm run invalidated -- --stack <name> [--json] [--refresh]";

function parse(argv: string[]): { stack: string; json: boolean; refresh: boolean } {
  let stack: string | undefined;
  let json = false;
  let refresh = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--json") json = true;
    else if (a === "--refresh") refresh = true;
    else if (a === "--stack" && argv[i + 1] && !argv[i + 1]!.startsWith("--")) stack = argv[++i];
    else if (a.startsWith("--stack=")) stack = a.slice("--stack=".length);
    else throw new Error(`unknown argument ${JSON.stringify(a)}\n${USAGE}`);
  }
  if (!stack) throw new Error(`--stack is required\n${USAGE}`);
  return { stack, json, refresh };
}

async function main(): Promise<void> {
  let args;
  try {
    args = parse(process.argv.slice(2));
  } catch (e) {
    process.stderr.write(`${(e as Error).message}\n`);
    process.exit(2);
  }
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

void main();

/**
 * `npm run report -- --stack <name> [--out <file>] [--offline]`: writes the evidence report of a stack
 * (lib/report/html) as one static HTML page, by default `runs/<stack>/report.html`. The stack's outputs
 * choose which records are shown; with `--offline`, or when they cannot be read, the newest record of
 * each kind and subject in the store stands in. The store is the one the stack's `evidence.store` names;
 * `--offline` reads this project's `runs/<stack>/evidence` without asking the stack anything. Exits 2 on
 * bad arguments, 1 when the stack has no evidence store or the page cannot be written.
 */
import * as fs from "node:fs";
import { promises as fsp } from "node:fs";
import * as path from "node:path";
import { EvidenceStore, evidenceRoot } from "../lib/evidence/store";
import { DEFAULT_LOCATION, type EvidenceLocation } from "../lib/evidence/location";
import { evidenceLocationOf, openEvidence } from "./stack/evidence";
import { openStack } from "./stack/select";
import { collectReport } from "../lib/report/html/collect";
import { evidencePointers, heldGenerations } from "../lib/report/html/select";
import { renderReport } from "../lib/report/html/page";
import { parseFlags, parseOrExit, required, UsageError } from "./args";

const USAGE = "usage: npm run report -- --stack <name> [--out <file>] [--offline]";
const PROJECT_ROOT = path.resolve(__dirname, "..");

export function parseReportArgs(argv: readonly string[]): { stack: string; out?: string; offline: boolean } {
  const wants = { stack: "a stack name", out: "the HTML file to write" };
  const values = parseFlags(argv, { stack: { type: "string" }, out: { type: "string" }, offline: { type: "boolean" } }, wants);
  return { stack: required(values.stack, "stack", wants.stack), ...(values.out ? { out: values.out } : {}), offline: values.offline ?? false };
}

async function heldBy(stack: string): Promise<{ pointers: Map<string, string>; generations: Map<string, string>; location: EvidenceLocation } | undefined> {
  try {
    // One workspace for both reads: opening a stack runs the CLI.
    const opened = await openStack(stack);
    const outputs = await opened.outputs();
    const location = await evidenceLocationOf(opened);
    return { pointers: evidencePointers(outputs), generations: heldGenerations(outputs), location };
  } catch (e) {
    const first = (e as Error).message.split("\n").find((l) => l.startsWith("error:")) ?? (e as Error).message.split("\n")[0];
    process.stderr.write(`stack ${stack}: outputs not read (${first}); showing the newest record of each kind and subject\n`);
    return undefined;
  }
}

async function main(): Promise<void> {
  const args = parseOrExit(() => {
    const parsed = parseReportArgs(process.argv.slice(2));
    try {
      evidenceRoot(PROJECT_ROOT, parsed.stack);
    } catch (e) {
      throw new UsageError(`--stack: ${(e as Error).message}`);
    }
    return parsed;
  }, USAGE);
  try {
    const root = evidenceRoot(PROJECT_ROOT, args.stack);
    const held = args.offline ? undefined : await heldBy(args.stack);
    const location = held?.location ?? DEFAULT_LOCATION;
    // A mistyped stack name would otherwise give an empty page that looks like a fleet with no evidence.
    if (location.type === "folder" && !fs.existsSync(root)) throw new Error(`no evidence store at ${path.relative(PROJECT_ROOT, root)}: has the stack been deployed from this project?`);
    const store: EvidenceStore = openEvidence(args.stack, location);
    const data = await collectReport(store, { stack: args.stack, pointers: held?.pointers, generations: held?.generations });
    const out = path.resolve(args.out ?? path.join(root, "..", "report.html"));
    await fsp.mkdir(path.dirname(out), { recursive: true });
    await fsp.writeFile(out, renderReport(data), "utf8");
    const counts = `${data.profiles.length} profile(s), ${data.fabric ? data.fabric.cells.length : 0} fabric edge(s), ${data.preflight ? "preflight" : "no preflight"}, ${data.identities.length} engine(s), ${data.capacity?.points.length ?? 0} trial point(s), ${data.invalid.length} invalid record(s)`;
    process.stdout.write(`${out}\n${counts}\n`);
  } catch (e) {
    process.stderr.write(`report of stack ${args.stack} failed: ${(e as Error).message}\n`);
    process.exit(1);
  }
}

if (require.main === module) void main();

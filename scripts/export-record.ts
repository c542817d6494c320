/**
 * `npm run export-record -- --stack <name> --out <dir>`: writes the stack's per-gate deployment record
 * into its evidence store, then a sanitised copy of it, of every record and of the text artifacts under
 * `<dir>` (lib/evidence/export.ts), and prints each gate's status with the steps that failed it (a
 * capacity-trial point with its trial verdict). Host aliases come from the stack config; the stack's secrets are
 * read (decrypted with the stack's passphrase) only to be redacted. Exits 2 on bad arguments, 1 on failure.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parseFleetConfig } from "../lib/config/parse";
import { exportAliases, splitStackConfig, type DiscoveredHost } from "../lib/evidence/export-aliases";
import { exportDeploymentRecord } from "../lib/evidence/export";
import { gateLines } from "../lib/evidence/deployment-record";
import { sourceRevision } from "../lib/evidence/revision";
import { parseFlags, parseOrExit, required } from "./args";
import { openStack, PROJECT_ROOT } from "./stack/select";
import { openEvidence } from "./stack/evidence";
import { parseEvidenceLocation } from "../lib/evidence/location";

const USAGE = "usage: npm run export-record -- --stack <name> --out <dir>";

export interface ExportRecordArgs {
  readonly stack: string;
  /** Absolute: a relative --out is resolved against `cwd`. */
  readonly out: string;
}

/** @param cwd where the command was called from (npm runs scripts from the project folder) */
export function parseExportRecordArgs(argv: readonly string[], cwd: string): ExportRecordArgs {
  const values = parseFlags(argv, { stack: { type: "string" }, out: { type: "string" } }, { stack: "a stack name", out: "a folder to write the sanitised copy to" });
  const stack = required(values.stack, "stack", "a stack name");
  const out = required(values.out, "out", "a folder to write the sanitised copy to");
  return { stack, out: path.resolve(cwd, out) };
}

async function main(): Promise<void> {
  // npm runs scripts from the project folder; a relative --out is meant from where npm was called.
  const args = parseOrExit(() => parseExportRecordArgs(process.argv.slice(2), process.env.INIT_CWD ?? process.cwd()), USAGE);
  try {
    const stack = await openStack(args.stack);
    const project = (await stack.workspace.projectSettings()).name;
    const config = await stack.getAllConfig();
    const { plain, secrets } = splitStackConfig(project, config);
    // A key named by file is as secret as one held in config.
    const keyFile = config[`${project}:sshPrivateKeyFile`]?.value;
    if (keyFile && fs.existsSync(path.resolve(PROJECT_ROOT, keyFile))) secrets.push(fs.readFileSync(path.resolve(PROJECT_ROOT, keyFile), "utf8"));
    const spec = parseFleetConfig(plain);
    const outputs = await stack.outputs();
    const discovered = (outputs.hosts?.value ?? {}) as Record<string, DiscoveredHost>;
    const aliases = exportAliases({ spec, stack: args.stack, discovered, secrets, projectRoot: PROJECT_ROOT, home: os.homedir() });
    // The index stored beside the records obeys the store's rule too: no registered secret in it.
    const store = openEvidence(args.stack, parseEvidenceLocation(spec.evidence.store), { secrets });
    const engineHosts = Object.fromEntries(spec.engines.map((e) => [e.id, e.host]));
    const result = await exportDeploymentRecord({ store, stack: args.stack, aliases, engineHosts, outDir: args.out, sourceRevision: sourceRevision(PROJECT_ROOT) });
    process.stdout.write(
      `deployment record ${result.index.digest} (${result.index.relativePath} in the evidence store)\n` +
        `exported ${Object.keys(result.files).length} sanitised files to ${args.out}` +
        (Object.keys(result.withheld).length ? `; ${Object.keys(result.withheld).length} binary artifacts withheld (see manifest.json)\n` : "\n") +
        // Aliases only: a step subject is a host, engine, edge or point alias, never an address.
        gateLines(result.deployment)
          .map((l) => `${l}\n`)
          .join(""),
    );
  } catch (e) {
    process.stderr.write(`export of stack ${args.stack} failed: ${(e as Error).message}\n`);
    process.exit(1);
  }
}

if (require.main === module) void main();

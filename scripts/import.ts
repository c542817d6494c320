/**
 * `npm run import -- --env <path> [--fleet <fleet.json>] [--profiles <store>] [--calibration <file>]
 *  [--ssh-config <file>] [--ssh-key <file>] --stack <name>`
 *
 * Writes `Pulumi.<name>.yaml` from a runbook deployment's `.env` (and fleet.json): plain values through
 * `pulumi config set-all`, passwords and keys through `pulumi config set --secret` with the value on
 * stdin, so they are encrypted by the stack's secrets provider and never appear in a file, an argument
 * list or this program's output. Reports every field it used, every one it could not map and why, and
 * stops before touching the stack when the result would not pass the config schema. An existing stack
 * file is never overwritten.
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parseEnvFile } from "../lib/import/dotenv";
import { importRunbook, type ImportResult } from "../lib/import/runbook";
import { samplesPath } from "../lib/profiling/store";
import { parseFlags, required, UsageError } from "./args";

const USAGE = "usage: npm run import -- --env <path> [--fleet <fleet.json>] [--profiles <store.json>] [--calibration <first-token.json>] [--ssh-config <file>] [--ssh-key <file>] --stack <name>";
const STACK_NAME = /^[A-Za-z0-9_.-]{1,100}$/;
/** Bounded wait for one pulumi CLI call (a local backend answers in seconds). */
const PULUMI_TIMEOUT_MS = 120_000;

class ImportFailure extends Error {}

const FLAGS = {
  env: { type: "string" },
  fleet: { type: "string" },
  profiles: { type: "string" },
  calibration: { type: "string" },
  "ssh-config": { type: "string" },
  "ssh-key": { type: "string" },
  stack: { type: "string" },
} as const;

const WANTS = {
  env: "the runbook deployment's .env file",
  fleet: "the runbook's fleet.json",
  profiles: "a profile store (profiles.json)",
  calibration: "a first-token calibration file",
  "ssh-config": "an OpenSSH client config file",
  "ssh-key": "an SSH private key file",
  stack: "a stack name",
};

export type ImportArgs = { readonly env: string; readonly stack: string } & { readonly [K in Exclude<keyof typeof FLAGS, "env" | "stack">]?: string };

export function parseImportArgs(argv: readonly string[]): ImportArgs {
  const values = parseFlags(argv, FLAGS, WANTS);
  const env = required(values.env, "env", WANTS.env);
  const stack = required(values.stack, "stack", WANTS.stack);
  if (!STACK_NAME.test(stack)) throw new UsageError(`--stack ${JSON.stringify(stack)}: a stack name is letters, digits, "_", "." and "-"`);
  return { ...values, env, stack };
}

const expand = (p: string, base: string) => path.resolve(base, p.replace(/^~(?=$|\/)/, os.homedir()));

function readText(file: string, what: string): string {
  try {
    return fs.readFileSync(file, "utf8");
  } catch (err) {
    throw new ImportFailure(`${what} ${file}: ${(err as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (err as Error).message}`);
  }
}

/** The runbook's `profiles.path` is relative to its checkout: fleet.json sits in `config/` of it. */
function profileResolver(fleetFile: string, explicit: string | undefined): (p: string) => string | undefined {
  return (p) => {
    const candidates = explicit ? [explicit] : path.isAbsolute(p) ? [p] : [path.resolve(path.dirname(fleetFile), "..", p), path.resolve(path.dirname(fleetFile), p)];
    return candidates.find((c) => fs.existsSync(c) && fs.existsSync(samplesPath(c)));
  };
}

/** The runbook's `engine.first_token_calibration_path`, found as `profiles.path` is. */
function calibrationResolver(fleetFile: string, explicit: string | undefined): (p: string) => string | undefined {
  return (p) => {
    const candidates = explicit ? [explicit] : path.isAbsolute(p) ? [p] : [path.resolve(path.dirname(fleetFile), "..", p), path.resolve(path.dirname(fleetFile), p)];
    return candidates.find((c) => fs.existsSync(c));
  };
}

function report(r: ImportResult): void {
  const used = new Map<string, string[]>();
  for (const u of r.used) used.set(u.from, [...(used.get(u.from) ?? []), u.to]);
  console.log("Mapped:");
  for (const [from, to] of used) console.log(`  ${from} -> ${[...new Set(to)].join(", ")}`);
  if (r.unmapped.length) {
    console.log("Not mapped:");
    for (const u of r.unmapped) console.log(`  ${u.from}: ${u.reason}`);
  }
  if (r.problems.length) {
    console.error("Problems (nothing was written):");
    for (const p of r.problems) console.error(`  ${p.from}: ${p.message}`);
  }
}

function pulumi(args: string[], cwd: string, input?: string): void {
  const run = spawnSync("pulumi", [...args, "--non-interactive"], { cwd, input, encoding: "utf8", timeout: PULUMI_TIMEOUT_MS, env: process.env });
  if (run.error) throw new ImportFailure(`pulumi ${args[0]} ${args[1] ?? ""}: ${run.error.message}`);
  if (run.status !== 0) throw new ImportFailure(`pulumi ${args.slice(0, 2).join(" ")} failed: ${(run.stderr || run.stdout).trim()}`);
}

/** Creates the stack and writes its config; removes the stack again if any step fails. */
function writeStack(r: ImportResult, stack: string, project: string, stackFile: string): void {
  pulumi(["stack", "init", stack], project);
  try {
    const plain: Record<string, { value: string; objectValue?: unknown; secret: false }> = {};
    for (const [key, value] of Object.entries(r.config)) {
      plain[`narwhal-fleet:${key}`] = typeof value === "string" ? { value, secret: false } : { value: JSON.stringify(value), objectValue: value, secret: false };
    }
    pulumi(["config", "set-all", "--stack", stack, "--json", JSON.stringify(plain)], project);
    for (const s of r.secrets) pulumi(["config", "set", "--stack", stack, "--secret", ...(s.path ? ["--path"] : []), `narwhal-fleet:${s.key}`], project, s.value);
    const written = fs.readFileSync(stackFile, "utf8");
    // The CLI encrypts what --secret sets; a plaintext secret in the file would be a bug worth stopping for.
    const leaked = r.secrets.filter((s) => s.value.trim().length >= 4 && written.includes(s.value.trim().split("\n")[0]));
    if (leaked.length) throw new ImportFailure(`refusing to keep ${stackFile}: ${leaked.map((s) => s.from).join(", ")} appears in plain text`);
  } catch (err) {
    spawnSync("pulumi", ["stack", "rm", stack, "--yes", "--force", "--non-interactive"], { cwd: project, encoding: "utf8", timeout: PULUMI_TIMEOUT_MS });
    fs.rmSync(stackFile, { force: true });
    throw err;
  }
}

function main(argv: string[]): number {
  let args: ImportArgs;
  try {
    args = parseImportArgs(argv);
  } catch (err) {
    if (err instanceof UsageError) throw new ImportFailure(`${err.message}\n${USAGE}`);
    throw err;
  }
  const project = process.cwd();
  // npm runs scripts from the project folder; paths on the command line are the caller's.
  const here = process.env.INIT_CWD ?? project;
  const at = (p: string) => path.resolve(here, p);
  if (!fs.existsSync(path.join(project, "Pulumi.yaml"))) throw new ImportFailure(`${project} has no Pulumi.yaml; run the import from the project folder`);
  const stackFile = path.join(project, `Pulumi.${args.stack}.yaml`);
  if (fs.existsSync(stackFile)) throw new ImportFailure(`${path.basename(stackFile)} exists; refusing to overwrite it (choose another --stack, or remove the file and its stack yourself)`);

  const envFile = at(args.env);
  const envText = readText(envFile, "--env");
  const knownHostsEntry = parseEnvFile(envText).entries.filter((e) => e.key === "NARWHAL_SSH_KNOWN_HOSTS").pop();
  let knownHosts: string | undefined;
  if (knownHostsEntry) {
    try {
      knownHosts = fs.readFileSync(expand(knownHostsEntry.value, path.dirname(envFile)), "utf8");
    } catch {
      knownHosts = undefined; // reported by the mapping as not read
    }
  }
  const fleetFile = args.fleet ? at(args.fleet) : undefined;
  let fleet: Parameters<typeof importRunbook>[0]["fleet"];
  if (fleetFile) {
    let document: unknown;
    try {
      document = JSON.parse(readText(fleetFile, "--fleet"));
    } catch (err) {
      if (err instanceof ImportFailure) throw err;
      throw new ImportFailure(`--fleet ${fleetFile}: not JSON (${(err as Error).message})`);
    }
    fleet = {
      document,
      label: path.basename(fleetFile),
      resolveProfiles: profileResolver(fleetFile, args.profiles ? at(args.profiles) : undefined),
      resolveCalibration: calibrationResolver(fleetFile, args.calibration ? at(args.calibration) : undefined),
    };
  }
  const extra: Array<{ path: Array<string | number>; value: unknown; from: string }> = [];
  if (args["ssh-config"]) extra.push({ path: ["ssh", "configFile"], value: at(args["ssh-config"]), from: "--ssh-config" });
  if (args.profiles && !fleetFile) extra.push({ path: ["profiling", "adoptStore"], value: at(args.profiles), from: "--profiles" });
  if (args.calibration && !fleetFile) extra.push({ path: ["calibration", "enabled"], value: true, from: "--calibration" }, { path: ["calibration", "adopt", "path"], value: at(args.calibration), from: "--calibration" });
  const sshKey = args["ssh-key"] ? { text: readText(at(args["ssh-key"]), "--ssh-key"), from: "--ssh-key" } : undefined;

  const result = importRunbook({ env: envText, fleet, knownHosts, extra, sshPrivateKey: sshKey });
  report(result);
  if (result.problems.length) return 1;
  if (!result.secrets.some((s) => s.key === "engineApiKey")) console.log("Note: no NARWHAL_ENGINE_API_KEY; set one with `pulumi config set --secret engineApiKey` before `up`.");
  writeStack(result, args.stack, project, stackFile);
  console.log(`Wrote ${path.basename(stackFile)} (${result.secrets.length} secret value${result.secrets.length === 1 ? "" : "s"} encrypted). Next: pulumi preview --stack ${args.stack}`);
  return 0;
}

if (require.main === module) {
  try {
    process.exitCode = main(process.argv.slice(2));
  } catch (err) {
    console.error(`import: ${(err as Error).message}`);
    process.exitCode = err instanceof ImportFailure ? 1 : 2;
  }
}

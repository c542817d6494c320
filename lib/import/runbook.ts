/**
 * Import of a runbook deployment (`.env`, optionally `config/fleet.json`) as this program's stack
 * config: pure mapping, then the same schema every `up` parses, with each problem named by the `.env`
 * key or fleet.json field behind it. Nothing here writes a file or runs a command (scripts/import.ts does).
 */
import { parseFleetConfig } from "../config/parse";
import { parseEnvFile } from "./dotenv";
import { Draft, type Problem, type SecretValue, type Unmapped } from "./draft";
import { mapEnv } from "./env-map";
import { mapFleet } from "./fleet-map";
import { knownHostLookup } from "./known-hosts";


export interface ImportSources {
  /** The `.env` text. */
  readonly env: string;
  /** fleet.json, parsed, with its label for messages. */
  readonly fleet?: { readonly document: unknown; readonly label: string; readonly resolveProfiles?: (path: string) => string | undefined; readonly resolveCalibration?: (path: string) => string | undefined };
  /** The text of the known_hosts file `NARWHAL_SSH_KNOWN_HOSTS` names, when it could be read. */
  readonly knownHosts?: string;
  /** A private key for every key-authenticated host (the stack's `sshPrivateKey` secret). */
  readonly sshPrivateKey?: { readonly text: string; readonly from: string };
  /** Plain config to add (e.g. `ssh.configFile` from the command line), applied last. */
  readonly extra?: ReadonlyArray<{ path: Array<string | number>; value: unknown; from: string }>;
}

export interface ImportResult {
  /** Plain `narwhal-fleet:*` values by config key; valid by the schema when `problems` is empty. */
  readonly config: Record<string, unknown>;
  readonly secrets: ReadonlyArray<SecretValue>;
  readonly used: ReadonlyArray<{ from: string; to: string }>;
  readonly unmapped: ReadonlyArray<Unmapped>;
  readonly problems: ReadonlyArray<Problem>;
}

/** For a value the `.env` left unset, the runbook field that sets it. */
const SET_BY: ReadonlyArray<[RegExp, string]> = [
  [/^model$|^model\.servedName$/, "NARWHAL_ENGINE_MODEL_NAME"],
  [/^model\.checkpointDir$/, "NARWHAL_MODEL_DIR"],
  [/^hosts\[\d+\]\.fabricInterface$|^fabric\.interface$/, "NARWHAL_FABRIC_INTERFACE"],
  [/^runtime\.image$/, "NARWHAL_ENGINE_IMAGE"],
  [/^engines$|^hosts$/, "NARWHAL_NODE_<n>_SSH"],
];

function unsetKey(path: string, d: Draft): string | undefined {
  if (d.origin.has(path)) return undefined;
  return SET_BY.find(([pattern]) => pattern.test(path))?.[1];
}

export function importRunbook(src: ImportSources): ImportResult {
  const d = new Draft();
  const file = parseEnvFile(src.env);
  for (const p of file.problems) d.problem(`.env line ${p.line}`, p.message);
  const env = mapEnv(file.entries, d, { knownHostKeys: src.knownHosts !== undefined ? knownHostLookup(src.knownHosts) : undefined, stackKey: src.sshPrivateKey !== undefined });
  if (src.sshPrivateKey !== undefined) d.secret("sshPrivateKey", src.sshPrivateKey.text, src.sshPrivateKey.from);
  if (src.fleet) mapFleet(src.fleet.document, env, d, { label: src.fleet.label, resolveProfiles: src.fleet.resolveProfiles, resolveCalibration: src.fleet.resolveCalibration });
  for (const e of src.extra ?? []) d.set(e.path, e.value, e.from);
  if (d.problems.length === 0) {
    try {
      parseFleetConfig(d.config);
    } catch (err) {
      const issues = (err as { code?: string; issues?: ReadonlyArray<{ path: string; message: string }> }).issues;
      if ((err as { code?: string }).code !== "NARWHAL_CONFIG_INVALID" || !issues) throw err;
      for (const issue of issues) {
        const from = unsetKey(issue.path, d) ?? d.sourceOf(issue.path);
        d.problem(from ? `${from} (${issue.path})` : issue.path, issue.message);
      }
    }
  }
  return { config: d.config, secrets: d.secrets, used: d.used, unmapped: d.unmapped, problems: d.problems };
}

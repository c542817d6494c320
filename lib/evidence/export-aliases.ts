/**
 * The alias map of a stack's export, from its config and what discovery found: every way the private
 * environment names a host maps to that host's alias from the stack config, and the folders this
 * program writes map to fixed path aliases.
 */
import type { FleetSpec } from "../config/types";
import { SECRET_CONFIG_KEYS } from "../config/secrets";
import type { ExportAliases } from "./sanitise";

/** What discovery reported for a host (the stack's `hosts` output); both fields optional before Gate A. */
export interface DiscoveredHost {
  readonly hostname?: string;
  readonly fabricAddress?: string;
}

export interface AliasSources {
  readonly spec: FleetSpec;
  readonly stack: string;
  /** Host alias -> discovery's view of it. */
  readonly discovered?: Readonly<Record<string, DiscoveredHost>>;
  /** Secret config values (engine API key, SSH keys and passwords, Grafana's password). */
  readonly secrets?: Iterable<string | undefined>;
  /** This project's folder on the management workstation, and the operator's home folder. */
  readonly projectRoot: string;
  readonly home?: string;
}

/**
 * The export aliases of one stack. Path aliases: `run` (the stack's folder under the hosts' `stateDir`),
 * `state` (that `stateDir`, where other stacks' folders are too), `model` (the checkpoint), `project`
 * (this program's folder) and `home`. A host whose `stateDir` differs from the first host's gets
 * `run-<alias>` and `state-<alias>`.
 */
export function exportAliases(sources: AliasSources): ExportAliases {
  const { spec } = sources;
  const hosts: Record<string, string[]> = {};
  for (const h of spec.hosts) {
    const names = [h.destination];
    if (h.urlHost) names.push(h.urlHost);
    if (h.fabricAddress) names.push(h.fabricAddress);
    const seen = sources.discovered?.[h.alias];
    if (seen?.hostname) names.push(seen.hostname);
    if (seen?.fabricAddress) names.push(seen.fabricAddress);
    hosts[h.alias] = [...new Set(names)];
  }
  const paths: Record<string, string> = { model: spec.model.checkpointDir, project: sources.projectRoot };
  const named = new Set<string>();
  for (const h of spec.hosts) {
    if (named.has(h.stateDir)) continue;
    const suffix = named.size === 0 ? "" : `-${h.alias}`;
    named.add(h.stateDir);
    paths[`state${suffix}`] = h.stateDir;
    paths[`run${suffix}`] = `${h.stateDir.replace(/\/+$/, "")}/${sources.stack}`;
  }
  // A home of "/" would alias every path. The longest prefix wins, so the project inside home stays `project`.
  if (sources.home && sources.home !== "/") paths.home = sources.home;
  return { hosts, paths, secrets: sources.secrets };
}

/** Config keys that hold secrets (entry/stack-config.ts reads the same ones as Pulumi secrets). */
const SECRET_KEYS: ReadonlySet<string> = new Set(SECRET_CONFIG_KEYS);

/** Every string inside a config value: secret maps (`sshPasswords`) hold one secret per host. */
function stringsOf(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.flatMap(stringsOf);
  if (value && typeof value === "object") return Object.values(value).flatMap(stringsOf);
  return [];
}

/**
 * Splits a stack's config, as `pulumi config --json --show-secrets` or the Automation API's
 * `getAllConfig` give it (`"<project>:<key>" -> {value, secret}`), into the plain keys the fleet schema
 * parses and the secret values the export must redact. A value marked secret is a secret whatever its key.
 */
export function splitStackConfig(
  project: string,
  config: Readonly<Record<string, { value: string; secret?: boolean }>>,
): { plain: Record<string, unknown>; secrets: string[] } {
  const plain: Record<string, unknown> = {};
  const secrets: string[] = [];
  for (const [fullKey, { value, secret }] of Object.entries(config)) {
    const [ns, key] = fullKey.split(":", 2);
    let parsed: unknown = value;
    try {
      parsed = JSON.parse(value);
    } catch {
      // plain strings stay strings
    }
    if (secret || (ns === project && key !== undefined && SECRET_KEYS.has(key))) {
      secrets.push(value, ...stringsOf(parsed));
      continue;
    }
    if (ns === project && key && key !== "sshPrivateKeyFile") plain[key] = parsed;
  }
  return { plain, secrets: [...new Set(secrets.filter((s) => s.length > 0))] };
}

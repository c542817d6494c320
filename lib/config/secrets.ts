/**
 * Secret config keys given in clear text. A value set without `--secret` sits unencrypted in the stack
 * file (and often in git), so the program refuses it before anything is deployed, naming the exact
 * command that stores it encrypted instead.
 *
 * How we know: the Pulumi Node SDK hands the program the list of secret config keys in the
 * PULUMI_CONFIG_SECRET_KEYS environment variable (full keys, `narwhal-fleet:engineApiKey`). It lists
 * top-level keys only: after `pulumi config set --secret --path 'sshPasswords.sim1' …` the whole
 * `sshPasswords` key is listed, so a second, plain entry in that same object cannot be told apart here.
 */
import { renderPath, type ConfigIssue } from "./errors";

/** Keys that hold a credential; each must be a Pulumi secret. */
export const SECRET_CONFIG_KEYS = ["engineApiKey", "sshPrivateKey", "sshPrivateKeys", "sshPasswords", "grafanaAdminPassword"] as const;

/** Secret keys that hold one value per host alias (`sshPasswords.sim1`). */
const PER_HOST = new Set<string>(["sshPrivateKeys", "sshPasswords"]);

/** The command that stores `path` as a secret: `--path` whenever it reaches inside an object. */
export function secretSetCommand(path: readonly string[]): string {
  const rendered = renderPath(path);
  return path.length > 1 ? `pulumi config set --secret --path '${rendered}' <value>` : `pulumi config set --secret ${rendered} <value>`;
}

/** The secret key list the SDK passes (a JSON array of full keys), or none when it is absent or unreadable. */
export function parseSecretKeyList(envValue: string | undefined): string[] {
  if (!envValue) return [];
  try {
    const list: unknown = JSON.parse(envValue);
    return Array.isArray(list) ? list.filter((k): k is string => typeof k === "string") : [];
  } catch {
    return [];
  }
}

/**
 * One issue per secret value set in clear text.
 * @param config every config value of the stack, by full key (`pulumi.runtime.allConfig()`)
 * @param secretKeys the full keys Pulumi marks as secret
 */
export function cleartextSecretIssues(project: string, config: Readonly<Record<string, string>>, secretKeys: readonly string[]): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  for (const key of SECRET_CONFIG_KEYS) {
    const full = `${project}:${key}`;
    if (!(full in config) || secretKeys.includes(full)) continue;
    const perHost = PER_HOST.has(key) ? objectKeys(config[full]) : undefined;
    if (perHost && perHost.length > 0) {
      for (const alias of perHost) issues.push(cleartext([key, alias]));
    } else if (PER_HOST.has(key)) {
      issues.push({
        path: key,
        message: `set in clear text; it holds one secret per host alias: set each with \`pulumi config set --secret --path '${key}.<alias>' <value>\``,
      });
    } else issues.push(cleartext([key]));
  }
  return issues;
}

function cleartext(path: readonly string[]): ConfigIssue {
  return {
    path: renderPath(path),
    message: `set in clear text, so it is stored unencrypted in the stack file; store it as a secret: \`${secretSetCommand(path)}\``,
  };
}

function objectKeys(value: string): string[] | undefined {
  try {
    const parsed: unknown = JSON.parse(value);
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) ? Object.keys(parsed) : undefined;
  } catch {
    return undefined;
  }
}

import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { FleetConfigError, type ConfigIssue } from "../lib/config/errors";
import { FleetSpec } from "../lib/config/types";
import { parseFleetConfig } from "../lib/config/parse";
import { keyFileIssue, MISSING_API_KEY, sshConfigIssue } from "../lib/config/local-files";
import { CredentialKeysSchema } from "../lib/config/schema/credentials";
import { readOperatorSshConfig } from "../lib/fleet/operator-ssh-config";
import type { SshConfig } from "../lib/ssh/ssh-config/resolve";
import type { SshConfigFiles } from "../lib/ssh/ssh-config/load";
import { cleartextSecretIssues, parseSecretKeyList, SECRET_CONFIG_KEYS } from "../lib/config/secrets";
import type { FleetSecrets } from "../components/fleet-inputs";

/**
 * Keys read apart from the zod parse: the secrets, and the key file path (a file whose content is one).
 * Taken from the schema that documents them, so a key read here is a key docs/config.md lists.
 */
const NOT_IN_SCHEMA: readonly string[] = Object.keys(CredentialKeysSchema.shape);

export interface StackConfig {
  spec: FleetSpec;
  secrets: FleetSecrets;
  sshConfig?: SshConfig;
}

/**
 * Reads the stack's `narwhal-fleet:*` config once: every plain key goes through the zod schema (an
 * unknown key is reported there, so a typo never passes silently), secrets stay Pulumi secrets.
 *
 * Everything it refuses ends the program as a `pulumi.RunError`: the SDK prints a RunError's message
 * alone, where any other error comes with its stack frames and a coloured dump of its fields.
 */
export function readStackConfig(): StackConfig {
  try {
    return read();
  } catch (err) {
    if ((err as { code?: string }).code === "NARWHAL_CONFIG_INVALID") throw new pulumi.RunError((err as Error).message);
    throw err;
  }
}

function read(): StackConfig {
  const project = pulumi.getProject();
  const config = new pulumi.Config();
  const all = pulumi.runtime.allConfig();
  const issues: ConfigIssue[] = cleartextSecretIssues(project, all, secretKeys(project));

  const raw: Record<string, unknown> = {};
  for (const [fullKey, value] of Object.entries(all)) {
    const [ns, key] = fullKey.split(":");
    if (ns !== project || !key || NOT_IN_SCHEMA.includes(key)) continue;
    raw[key] = parseValue(value);
  }
  let spec: FleetSpec | undefined;
  try {
    spec = parseFleetConfig(raw);
  } catch (err) {
    if ((err as { code?: string }).code !== "NARWHAL_CONFIG_INVALID") throw err;
    issues.push(...(err as FleetConfigError).issues);
  }

  const givenKey = config.getSecret("sshPrivateKey");
  const keyFile = givenKey ? undefined : config.get("sshPrivateKeyFile");
  const keyText = keyFile === undefined ? undefined : readLocal(keyFile, (resolved, code) => issues.push(keyFileIssue(keyFile, resolved, code)));
  const stackKey = givenKey ?? (keyText === undefined ? undefined : pulumi.secret(keyText));
  const apiKey = config.getSecret("engineApiKey");
  if (!apiKey) issues.push(MISSING_API_KEY);

  const home = os.homedir();
  const written = spec?.ssh.configFile;
  const sshConfigPath = written ? path.resolve(written) : path.join(home, ".ssh", "config");
  // A default ~/.ssh/config that is absent is fine: hosts are then reached by their address.
  const sshConfigText =
    spec && (written || fs.existsSync(sshConfigPath)) ? readLocal(written ?? sshConfigPath, (resolved, code) => issues.push(sshConfigIssue(written, resolved, code))) : undefined;
  const operator =
    spec && sshConfigText !== undefined ? readOperatorSshConfig(spec, { path: sshConfigPath, text: sshConfigText, home, localUser: localUserName(), files: LOCAL_FILES }) : undefined;
  issues.push(...(operator?.issues ?? []));
  const sshConfig = operator?.config;

  // Every problem at once, in one message; without a spec or an API key there is always an issue.
  if (!spec || !apiKey || issues.length > 0) throw new FleetConfigError(issues);
  const hostKeys = config.getSecretObject<Record<string, string>>("sshPrivateKeys");
  const passwords = config.getSecretObject<Record<string, string>>("sshPasswords");
  return {
    spec,
    sshConfig,
    secrets: {
      engineApiKey: apiKey,
      sshPrivateKey: (alias) =>
        hostKeys ? pulumi.all([hostKeys, stackKey]).apply(([own, shared]) => own[alias] ?? shared ?? "") : stackKey,
      sshPassword: (alias) => passwords?.apply((m) => m[alias] ?? ""),
      grafanaAdminPassword: config.getSecret("grafanaAdminPassword"),
    },
  };
}

/**
 * The secret keys of this stack, from the SDK: `runtime.isConfigSecret` reads its own store (right under
 * the Automation API too) but is not in its typings; older SDKs only have the environment variable.
 */
function secretKeys(project: string): string[] {
  const isSecret = (pulumi.runtime as unknown as { isConfigSecret?: (key: string) => boolean }).isConfigSecret;
  if (isSecret) return SECRET_CONFIG_KEYS.map((k) => `${project}:${k}`).filter((k) => isSecret(k));
  return parseSecretKeyList(process.env.PULUMI_CONFIG_SECRET_KEYS);
}

const LOCAL_FILES: SshConfigFiles = { readFile: (p) => fs.readFileSync(p, "utf8"), listDir: (p) => fs.readdirSync(p) };

/** This machine's user name, for `Match localuser` and `Match user`; a container without a passwd entry still has $USER or none. */
function localUserName(): string {
  try {
    return os.userInfo().username;
  } catch {
    return process.env.USER ?? "";
  }
}

/** Reads a file config names; a failure is reported through `failed` (with the resolved path) instead of thrown. */
function readLocal(written: string, failed: (resolved: string, code: string | undefined) => void): string | undefined {
  const resolved = path.resolve(written);
  try {
    return fs.readFileSync(resolved, "utf8");
  } catch (err) {
    failed(resolved, (err as NodeJS.ErrnoException).code);
    return undefined;
  }
}

/** Structured config arrives as JSON text; plain strings stay strings. */
function parseValue(value: string): unknown {
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}

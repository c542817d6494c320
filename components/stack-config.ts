import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { FleetSpec, parseFleetConfig } from "../lib/config";

/** Secret config keys: read as Pulumi secrets, never part of the plain fleet spec. */
const SECRET_KEYS = ["engineApiKey", "sshPrivateKey", "sshPrivateKeyFile", "sshPrivateKeys", "sshPasswords", "grafanaAdminPassword"] as const;

export interface FleetSecrets {
  readonly engineApiKey: pulumi.Output<string>;
  /** Key for a host: its own `sshPrivateKeys.<alias>`, else the stack's `sshPrivateKey`. */
  sshPrivateKey(alias: string): pulumi.Output<string> | undefined;
  sshPassword(alias: string): pulumi.Output<string> | undefined;
  /** Grafana's admin password (`grafanaAdminPassword`), needed when monitoring runs as containers. */
  readonly grafanaAdminPassword?: pulumi.Output<string>;
}

/**
 * Reads the stack's `narwhal-fleet:*` config once: every plain key goes through the zod schema (an
 * unknown key is reported there, so a typo never passes silently), secrets stay Pulumi secrets.
 */
export function readStackConfig(): { spec: FleetSpec; secrets: FleetSecrets; sshConfig?: { text: string; home: string } } {
  const project = pulumi.getProject();
  const config = new pulumi.Config();
  const raw: Record<string, unknown> = {};
  for (const [fullKey, value] of Object.entries(pulumi.runtime.allConfig())) {
    const [ns, key] = fullKey.split(":");
    if (ns !== project || !key || (SECRET_KEYS as readonly string[]).includes(key)) continue;
    raw[key] = parseValue(value);
  }
  const spec = parseFleetConfig(raw);

  const keyFile = config.get("sshPrivateKeyFile");
  const stackKey =
    config.getSecret("sshPrivateKey") ??
    (keyFile ? pulumi.secret(fs.readFileSync(path.resolve(keyFile), "utf8")) : undefined);
  const hostKeys = config.getSecretObject<Record<string, string>>("sshPrivateKeys");
  const passwords = config.getSecretObject<Record<string, string>>("sshPasswords");
  const apiKey = config.getSecret("engineApiKey");
  if (!apiKey) {
    throw new Error(
      "config narwhal-fleet:engineApiKey is missing: engines require an API key. " +
        "Set one with `pulumi config set --secret engineApiKey <key>`.",
    );
  }
  const home = os.homedir();
  const sshConfigPath = spec.ssh.configFile ? path.resolve(spec.ssh.configFile) : path.join(home, ".ssh", "config");
  if (spec.ssh.configFile && !fs.existsSync(sshConfigPath)) {
    throw new Error(`config narwhal-fleet:ssh.configFile: ${sshConfigPath} does not exist; name an OpenSSH client config file or remove the key`);
  }
  return {
    spec,
    sshConfig: fs.existsSync(sshConfigPath) ? { text: fs.readFileSync(sshConfigPath, "utf8"), home } : undefined,
    secrets: {
      engineApiKey: apiKey,
      sshPrivateKey: (alias) =>
        hostKeys ? pulumi.all([hostKeys, stackKey]).apply(([own, shared]) => own[alias] ?? shared ?? "") : stackKey,
      sshPassword: (alias) => passwords?.apply((m) => m[alias] ?? ""),
      grafanaAdminPassword: config.getSecret("grafanaAdminPassword"),
    },
  };
}

/** Structured config arrives as JSON text; plain strings stay strings. */
function parseValue(value: string): unknown {
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}

/**
 * The operator's ssh_config as the fleet reads it: the file with its Include files, then every fleet
 * host's login resolved once, so a file that cannot be read, an include cycle or a Match line this
 * program cannot evaluate for a fleet host is a config issue at `ssh.configFile`, reported with the
 * others before any resource is made. The disk is reached only through `files`.
 */
import type { ConfigIssue } from "../config/errors";
import type { FleetSpec } from "../config/types";
import { loadSshConfig, type SshConfigFiles } from "../ssh/ssh-config/load";
import type { SshConfig } from "../ssh/ssh-config/resolve";
import { resolveLogin } from "./host-plan";

export interface OperatorSshConfigSource {
  /** The config file's absolute path, and its text. */
  readonly path: string;
  readonly text: string;
  readonly home: string;
  readonly localUser: string;
  readonly files: SshConfigFiles;
}

const isOurs = (err: unknown) => (err as { code?: string }).code === "NARWHAL_SSH_CONFIG";

export function readOperatorSshConfig(spec: FleetSpec, source: OperatorSshConfigSource): { config?: SshConfig; issues: ConfigIssue[] } {
  let config: SshConfig;
  try {
    config = { root: loadSshConfig(source.path, source.text, { home: source.home, files: source.files }), home: source.home, localUser: source.localUser };
  } catch (err) {
    if (!isOurs(err)) throw err;
    return { issues: [{ path: "ssh.configFile", message: (err as Error).message }] };
  }
  const issues: ConfigIssue[] = [];
  for (const host of spec.hosts) {
    try {
      resolveLogin(spec, host, config);
    } catch (err) {
      // Other login problems (a ProxyJump that is no destination) are reported where the host is built, as before.
      if (isOurs(err)) issues.push({ path: "ssh.configFile", message: `host ${host.alias}: ${(err as Error).message}` });
    }
  }
  return { config, issues };
}

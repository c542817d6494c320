import type * as pulumi from "@pulumi/pulumi";
import type { CalibrationAdoptSource } from "../lib/preflight/calibration-adopt";
import type { AdoptSource } from "../lib/profiling/adopt";

/** The stack's credentials, as the config reader (entry/stack-config.ts) hands them over: Pulumi secrets. */
export interface FleetSecrets {
  readonly engineApiKey: pulumi.Output<string>;
  /** Key for a host: its own `sshPrivateKeys.<alias>`, else the stack's `sshPrivateKey`. */
  sshPrivateKey(alias: string): pulumi.Output<string> | undefined;
  sshPassword(alias: string): pulumi.Output<string> | undefined;
  /** Grafana's admin password (`grafanaAdminPassword`), needed when monitoring runs as containers. */
  readonly grafanaAdminPassword?: pulumi.Output<string>;
}

/**
 * What the program's entry read from this machine's files for the components (entry/local-files.ts),
 * so no component reads a file: each is read once, before any resource is declared.
 */
export interface LocalFiles {
  /** Per host alias: the private key its ssh_config IdentityFile holds, when config gives the host no key. */
  readonly identityKeys: ReadonlyMap<string, pulumi.Output<string>>;
  /** `calibration.adopt` (with calibration enabled): the file and the digest of its bytes. */
  readonly calibrationAdopt?: CalibrationAdoptSource;
  /** `profiling.adoptStore`: the store and its sidecar, with the digests of their bytes. */
  readonly profileAdopt?: AdoptSource;
}

/** A fleet with no local file to read: no identity file, nothing to adopt. */
export const NO_LOCAL_FILES: LocalFiles = { identityKeys: new Map() };

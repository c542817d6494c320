/**
 * The files on this machine that stack config points the components at, read once by the program's
 * entry before any resource is declared: components take the bytes' digests and the keys, never a path
 * to read. Each failure ends the run as a `pulumi.RunError` (the SDK prints its message alone, without
 * frames), in the order the Fleet used to meet them: discovery's identity files, then the profile store,
 * then the calibration file.
 */
import * as fs from "node:fs";
import * as pulumi from "@pulumi/pulumi";
import type { FleetSpec } from "../lib/config/types";
import { identityFileMessage } from "../lib/config/local-files";
import { resolveLogin } from "../lib/fleet/host-plan";
import { sha256Of, type CalibrationAdoptSource } from "../lib/preflight/calibration-adopt";
import { samplesPath, sha256Hex } from "../lib/profiling/store";
import type { AdoptSource } from "../lib/profiling/adopt";
import type { SshConfig } from "../lib/ssh/ssh-config/resolve";
import type { FleetSecrets, LocalFiles } from "../components/fleet-inputs";

export function readLocalFiles(spec: FleetSpec, secrets: FleetSecrets, sshConfig: SshConfig | undefined): LocalFiles {
  const identityKeys = new Map<string, pulumi.Output<string>>();
  for (const host of spec.hosts) {
    if (host.auth !== "key" || secrets.sshPrivateKey(host.alias)) continue;
    const key = identityFileKey(resolveLogin(spec, host, sshConfig).identityFile, host.alias);
    if (key) identityKeys.set(host.alias, key);
  }
  const { adoptStore } = spec.profiling;
  const adopt = spec.calibration.adopt;
  return {
    identityKeys,
    ...(adoptStore ? { profileAdopt: profileAdoptSource(adoptStore) } : {}),
    ...(spec.calibration.enabled && adopt ? { calibrationAdopt: calibrationAdoptSource(adopt) } : {}),
  };
}

/** The IdentityFile an ssh_config alias names, read once and kept a Pulumi secret; an absent one is no key. */
function identityFileKey(file: string | undefined, alias: string): pulumi.Output<string> | undefined {
  if (!file || !fs.existsSync(file)) return undefined;
  try {
    return pulumi.secret(fs.readFileSync(file, "utf8"));
  } catch (err) {
    throw new pulumi.RunError(identityFileMessage(alias, file, (err as NodeJS.ErrnoException).code));
  }
}

/**
 * The store `profiling.adoptStore` names and its sidecar, with the digests of the bytes read now: the
 * provider adopts from exactly these bytes or measures.
 */
function profileAdoptSource(storePath: string): AdoptSource {
  const digest = (file: string, what: string) => {
    try {
      return `sha256:${sha256Hex(fs.readFileSync(file))}`;
    } catch (err) {
      throw new pulumi.RunError(`config narwhal-fleet:profiling.adoptStore: cannot read the ${what} ${file} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); copy the runbook's store and its .samples.json there, or remove the key to profile every engine afresh`);
    }
  };
  const samples = samplesPath(storePath);
  return { storePath, storeSha256: digest(storePath, "profile store"), samplesPath: samples, samplesSha256: digest(samples, "sample sidecar") };
}

/**
 * The file `calibration.adopt` names, with the digest of the bytes read now (and the operator's pin):
 * the provider adopts exactly these bytes or measures.
 */
function calibrationAdoptSource(adopt: NonNullable<FleetSpec["calibration"]["adopt"]>): CalibrationAdoptSource {
  let bytes: Buffer;
  try {
    bytes = fs.readFileSync(adopt.path);
  } catch (err) {
    throw new pulumi.RunError(`config narwhal-fleet:calibration.adopt.path: cannot read the calibration ${adopt.path} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); copy the runbook's calibration file there, or remove the key to calibrate afresh`);
  }
  return { path: adopt.path, sha256: sha256Of(bytes), ...(adopt.sha256 ? { pinned: `sha256:${adopt.sha256}` } : {}) };
}

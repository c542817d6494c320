/**
 * Hashes the checkpoint on an engine host over one SSH session: the host reads its own disk, on every
 * core, and only a JSON manifest crosses the network.
 */
import { shellLine } from "../shell";
import type { SshSession } from "../ssh/client";
import { hashCheckpoint, HashOptions, HashResult, ScriptRunner } from "./driver";
import { HASH_SCRIPT } from "./hash-script";
import type { CheckpointManifest } from "./manifest";

/**
 * Hashes `dir` on the session's host. With `previous` (the last manifest of the same `dir` on the same
 * host), files whose (size, mtime, ctime, inode) are unchanged keep their sha256 without being read.
 */
export function hashCheckpointRemote(
  session: SshSession,
  dir: string,
  previous: CheckpointManifest | undefined,
  opts: HashOptions,
): Promise<HashResult> {
  const run: ScriptRunner = (args, stdin, timeoutS) =>
    session.exec(shellLine(["python3", "-c", HASH_SCRIPT, ...args]), { stdin, timeoutS, name: `checkpoint hash of ${dir}` });
  return hashCheckpoint(run, `host ${session.target.alias}`, dir, previous, opts);
}

/**
 * Runs HASH_SCRIPT through any transport (SSH session or local process) and turns its one JSON answer
 * into a manifest, or into a CheckpointError that names the host and the directory or file.
 */
import { z } from "zod";
import { CheckpointError, CheckpointErrorCode } from "./errors";
import { buildManifest, CheckpointManifest, comparePaths } from "./manifest";

export interface HashOptions {
  /** Threads hashing at once; default the number of CPUs the script may run on (its CPU affinity). */
  workers?: number;
  /** The script stops itself after this long; the transport gives up TRANSPORT_GRACE_S later. */
  timeoutS: number;
  /**
   * A previous entry is reused only if its ctime is older than the previous scan's start minus this
   * window, so a same-size rewrite in the same timestamp tick as the last read is never missed.
   * Default 1000 ms, which covers filesystems with one-second timestamps.
   */
  racyWindowMs?: number;
}

export interface HashStats {
  workers: number;
  /** Bytes actually read (re-hashed files only). */
  bytesRead: number;
  /** Wall time inside the script, from its start to its answer. */
  elapsedS: number;
  /** Peak resident set of the hashing process (ru_maxrss), or null where the platform lacks it. */
  peakRssKiB: number | null;
}

export interface HashResult {
  manifest: CheckpointManifest;
  /** Paths whose bytes were read this time, sorted. */
  rehashed: string[];
  /** Paths whose sha256 came from `previous` because their fingerprint had not changed, sorted. */
  reused: string[];
  stats: HashStats;
}

export interface ScriptRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `python3 -c HASH_SCRIPT ...args` with `stdin`; rejects only when the transport fails or times out. */
export type ScriptRunner = (args: string[], stdin: string, timeoutS: number) => Promise<ScriptRun>;

export const DEFAULT_RACY_WINDOW_MS = 1000;
/** Extra seconds the transport waits beyond the script's own deadline, so the script's report wins. */
export const TRANSPORT_GRACE_S = 5;

const Fingerprint = z.object({ size: z.number(), mtimeNs: z.string(), ctimeNs: z.string(), inode: z.string() });
const Answer = z.discriminatedUnion("ok", [
  z.object({
    ok: z.literal(true),
    scannedAtNs: z.string().regex(/^\d+$/),
    files: z.array(z.object({ path: z.string(), size: z.number(), sha256: z.string(), fingerprint: Fingerprint, reused: z.boolean() })),
    problems: z.array(
      z.object({
        path: z.string(),
        kind: z.enum(["symlink_outside_root", "dangling_symlink", "symlinked_directory", "not_a_regular_file"]),
        detail: z.string(),
      }),
    ),
    stats: z.object({ workers: z.number(), bytesRead: z.number(), elapsedS: z.number(), peakRssKiB: z.number().nullable() }),
  }),
  z.object({ ok: z.literal(false), error: z.object({ kind: z.string(), path: z.string(), detail: z.string() }) }),
]);

/** Hashes `dir` through `run`; `where` ("host sim1", "local") starts every error message. */
export async function hashCheckpoint(
  run: ScriptRunner,
  where: string,
  dir: string,
  previous: CheckpointManifest | undefined,
  opts: HashOptions,
): Promise<HashResult> {
  if (!dir.startsWith("/")) throw new CheckpointError("NARWHAL_CHECKPOINT_SCRIPT", `${where}: checkpoint directory must be an absolute path, got ${JSON.stringify(dir)}`);
  if (!(opts.timeoutS > 0 && Number.isFinite(opts.timeoutS))) throw new Error(`checkpoint hash: timeoutS must be a positive number of seconds, got ${opts.timeoutS}`);
  if (opts.workers !== undefined && !(Number.isInteger(opts.workers) && opts.workers >= 1))
    throw new Error(`checkpoint hash: workers must be a positive integer, got ${opts.workers}`);
  const racyWindowMs = opts.racyWindowMs ?? DEFAULT_RACY_WINDOW_MS;

  // Inode numbers and times only vouch for a file at the same path under the same root.
  const reusable = previous && previous.root === dir ? previous : undefined;
  const stdin = reusable
    ? JSON.stringify({
        scannedAtNs: reusable.scannedAtNs,
        files: reusable.files.map(({ path, size, sha256, fingerprint }) => ({ path, size, sha256, fingerprint })),
      })
    : "";
  const args = [dir, String(opts.workers ?? 0), String(racyWindowMs), String(opts.timeoutS)];
  const r = await run(args, stdin, opts.timeoutS + TRANSPORT_GRACE_S);

  const answer = parseAnswer(r);
  if (!answer) {
    if (r.code === 127 || /python3: (command )?not found|No such file or directory.*python3/.test(r.stderr))
      throw new CheckpointError("NARWHAL_CHECKPOINT_NO_PYTHON", `${where}: python3 not found; checkpoint discovery runs a Python 3 script on every engine host`);
    throw new CheckpointError("NARWHAL_CHECKPOINT_SCRIPT", `${where}: checkpoint hash of ${dir} exited ${r.code} without a result: ${tail(r.stderr || r.stdout)}`);
  }
  if (!answer.ok) throw scriptError(where, dir, opts.timeoutS, answer.error);

  const manifest = buildManifest({
    root: dir,
    files: answer.files.map(({ path, size, sha256, fingerprint }) => ({ path, size, sha256, fingerprint })),
    problems: answer.problems,
    scannedAtNs: answer.scannedAtNs,
  });
  return {
    manifest,
    rehashed: pathsWhere(answer.files, false),
    reused: pathsWhere(answer.files, true),
    stats: answer.stats,
  };
}

function parseAnswer(r: ScriptRun): z.infer<typeof Answer> | undefined {
  let json: unknown;
  try {
    json = JSON.parse(r.stdout);
  } catch {
    return undefined;
  }
  const parsed = Answer.safeParse(json);
  return parsed.success ? parsed.data : undefined;
}

function pathsWhere(files: ReadonlyArray<{ path: string; reused: boolean }>, reused: boolean): string[] {
  return files
    .filter((f) => f.reused === reused)
    .map((f) => f.path)
    .sort(comparePaths);
}

function scriptError(where: string, dir: string, timeoutS: number, e: { kind: string; path: string; detail: string }): CheckpointError {
  const file = e.path === dir || e.path === "." || e.path === "" ? dir : `${dir.replace(/\/+$/, "")}/${e.path}`;
  const [code, message]: [CheckpointErrorCode, string] = (() => {
    switch (e.kind) {
      case "missing_dir":
        return ["NARWHAL_CHECKPOINT_MISSING_DIR", `${where}: checkpoint directory ${dir} does not exist; stage the checkpoint there before discovery`];
      case "not_a_directory":
        return ["NARWHAL_CHECKPOINT_NOT_A_DIRECTORY", `${where}: checkpoint path ${dir} is not a directory`];
      case "unreadable":
        return ["NARWHAL_CHECKPOINT_UNREADABLE", `${where}: cannot read ${file} in checkpoint ${dir}: ${e.detail}`];
      case "changed_while_hashing":
        return ["NARWHAL_CHECKPOINT_CHANGED", `${where}: ${file} changed while it was being hashed (${e.detail}); let staging finish, then run discovery again`];
      case "unsupported_name":
        return ["NARWHAL_CHECKPOINT_NAME", `${where}: ${file}: ${e.detail}`];
      case "timeout":
        return ["NARWHAL_CHECKPOINT_TIMEOUT", `${where}: hashing checkpoint ${dir} did not finish within ${timeoutS}s`];
      default:
        return ["NARWHAL_CHECKPOINT_SCRIPT", `${where}: checkpoint hash of ${dir} failed (${e.kind}): ${e.detail}`];
    }
  })();
  return new CheckpointError(code, message);
}

function tail(text: string): string {
  return text.trim().split("\n").slice(-5).join(" | ") || "(no output)";
}

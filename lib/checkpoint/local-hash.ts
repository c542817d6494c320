/**
 * The same script run on this machine (tests, bench), so what they measure is the remote code path.
 */
import { spawn } from "node:child_process";
import { hashCheckpoint, HashOptions, HashResult, ScriptRun, ScriptRunner } from "./driver";
import { CheckpointError } from "./errors";
import { HASH_SCRIPT } from "./hash-script";
import type { CheckpointManifest } from "./manifest";

export interface LocalHashOptions extends HashOptions {
  /** The interpreter to run; default `python3` from PATH. */
  python?: string;
}

export function hashCheckpointLocal(dir: string, previous: CheckpointManifest | undefined, opts: LocalHashOptions): Promise<HashResult> {
  const python = opts.python ?? "python3";
  const run: ScriptRunner = (args, stdin, timeoutS) => runLocal(python, ["-c", HASH_SCRIPT, ...args], stdin, timeoutS);
  return hashCheckpoint(run, "local", dir, previous, opts);
}

function runLocal(command: string, args: string[], stdin: string, timeoutS: number): Promise<ScriptRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ["pipe", "pipe", "pipe"] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new CheckpointError("NARWHAL_CHECKPOINT_TIMEOUT", `local: checkpoint hash (${command}) did not finish within ${timeoutS}s`));
    }, timeoutS * 1000);
    child.stdout.on("data", (d: Buffer) => out.push(d));
    child.stderr.on("data", (d: Buffer) => err.push(d));
    // A missing interpreter looks like a shell's "not found", so the driver reports it the same way.
    child.on("error", (e: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      if (e.code === "ENOENT") resolve({ code: 127, stdout: "", stderr: `${command}: not found` });
      else reject(e);
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout: Buffer.concat(out).toString("utf8"), stderr: Buffer.concat(err).toString("utf8") });
    });
    // The script may exit (e.g. missing dir) before reading stdin; that EPIPE is not an error here.
    child.stdin.on("error", () => undefined);
    child.stdin.end(stdin);
  });
}

/**
 * Running commands as argv arrays (never a shell string), with a bounded, named timeout.
 */
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import { COMMAND_TIMEOUT_MS } from "./constants";

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  /** Names the step in error messages, e.g. "create bridge nwbr0". */
  what?: string;
  timeoutMs?: number;
  env?: NodeJS.ProcessEnv;
  input?: string;
  /** Resolve with the exit code instead of rejecting when the command fails. */
  allowFail?: boolean;
}

/** Error with a stable code for callers that match on it. */
export class SimError extends Error {
  constructor(
    public readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "SimError";
  }
}

export function run(argv: readonly string[], opts: RunOptions = {}): Promise<RunResult> {
  const [file, ...args] = argv;
  const timeoutMs = opts.timeoutMs ?? COMMAND_TIMEOUT_MS;
  const what = opts.what ?? argv.join(" ");
  return new Promise((resolve, reject) => {
    const child = execFile(
      file,
      args,
      { timeout: timeoutMs, killSignal: "SIGKILL", env: opts.env ?? process.env, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const out = String(stdout);
        const errText = String(stderr);
        if (!err) return resolve({ code: 0, stdout: out, stderr: errText });
        const e = err as NodeJS.ErrnoException & { killed?: boolean; code?: number | string };
        if (e.killed) {
          return reject(new SimError("SIM_TIMEOUT", `${what}: timed out after ${timeoutMs} ms (${argv.join(" ")})`));
        }
        if (typeof e.code === "number" && opts.allowFail) {
          return resolve({ code: e.code, stdout: out, stderr: errText });
        }
        const detail = errText.trim() || out.trim() || e.message;
        reject(new SimError("SIM_COMMAND_FAILED", `${what}: exit ${String(e.code)}: ${detail} (${argv.join(" ")})`));
      },
    );
    if (opts.input !== undefined) child.stdin?.end(opts.input);
  });
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `probe` until it returns a value other than undefined, or fails with a named timeout. */
export async function waitFor<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (let delay = 20; ; delay = Math.min(delay * 2, 250)) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() >= deadline) {
      const why = lastError instanceof Error ? `: ${lastError.message}` : "";
      throw new SimError("SIM_TIMEOUT", `${what}: not ready after ${timeoutMs} ms${why}`);
    }
    await sleep(delay);
  }
}

/**
 * True when a process with this pid exists and has not exited. A zombie counts as exited: on this
 * machine pid 1 reaps orphans only about once a second, and waiting for that would slow `down`.
 */
export function pidAlive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name, which is in parentheses and may itself contain spaces.
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state !== "Z" && state !== "X";
  } catch {
    return false;
  }
}

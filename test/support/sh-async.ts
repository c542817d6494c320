import { execFile, spawn } from "node:child_process";
import { promisify } from "node:util";

/**
 * Runs a script the way a remote command does (POSIX sh, stdin as given), without blocking the event loop:
 * for scripts that run while the test serves or sends requests, or whose children only a running loop reaps.
 */
export function shAsync(script: string, stdin = ""): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn("sh", ["-c", script], { stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(stdin);
  });
}

/** Runs a script with POSIX sh, bounded (90 s unless told): its exit status and output, never a throw. */
export async function shBounded(script: string, timeoutMs = 90_000): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)("sh", ["-c", script], { timeout: timeoutMs });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === "number" ? e.code : -1, stdout: e.stdout ?? "", stderr: e.stderr ?? "" };
  }
}

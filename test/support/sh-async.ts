import { spawn } from "node:child_process";

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

/** Temporary checkpoint trees for the script tests, made old enough for the reuse rule to trust them. */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { DEFAULT_RACY_WINDOW_MS } from "../../../lib/checkpoint/driver";

export function makeTree(files: Record<string, string | Buffer>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ckpt-test-"));
  fs.chmodSync(dir, 0o755); // readable by the unprivileged user of the unreadable-file test
  for (const [rel, content] of Object.entries(files)) writeFile(dir, rel, content);
  return dir;
}

export function writeFile(dir: string, rel: string, content: string | Buffer): void {
  const file = path.join(dir, rel);
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o755 });
  fs.writeFileSync(file, content);
}

/** Waits until every ctime written so far is outside the racy window of a scan starting now. */
export const pastRacyWindow = () => new Promise((r) => setTimeout(r, DEFAULT_RACY_WINDOW_MS + 50));

/** coreutils' answer for each file, relative path -> hex. */
export function sha256sumOf(dir: string, rels: string[]): Record<string, string> {
  const out = execFileSync("sha256sum", ["--", ...rels], { cwd: dir, encoding: "utf8" });
  return Object.fromEntries(out.trim().split("\n").map((l) => [l.slice(66), l.slice(0, 64)]));
}

/**
 * An interpreter command that runs python3 as `nobody` when we are root, because root reads a mode-000
 * file anyway. Returns undefined when neither way can produce an unreadable file.
 */
export function unprivilegedPython(scratch: string): string | undefined {
  if (process.getuid?.() !== 0) return "python3";
  const python = execFileSync("sh", ["-c", "command -v python3"], { encoding: "utf8" }).trim();
  const wrapper = path.join(scratch, "python-as-nobody");
  fs.writeFileSync(wrapper, `#!/bin/sh\nexec setpriv --reuid=65534 --regid=65534 --clear-groups ${python} "$@"\n`, { mode: 0o755 });
  try {
    execFileSync(wrapper, ["-c", "pass"]);
    return wrapper;
  } catch {
    return undefined;
  }
}

import { execFileSync } from "node:child_process";

/**
 * This program's full git revision, `-dirty` when the working tree has changes: the runbook's
 * deployment record wants the source every measurement was taken with. Outside a git checkout (an
 * unpacked release) the revision is unknown and says so with forty zeros.
 */
export function sourceRevision(projectRoot: string): string {
  try {
    const git = (...args: string[]) => execFileSync("git", ["-C", projectRoot, ...args], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
    const head = git("rev-parse", "HEAD");
    const dirty = git("status", "--porcelain", "--untracked-files=no") !== "";
    return dirty ? `${head}-dirty` : head;
  } catch {
    return "0".repeat(40);
  }
}

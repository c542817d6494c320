/**
 * What a stack may leave on a simulated host after `pulumi destroy`, listed so that a test compares the
 * host before the stack's first up with the host after its destroy: whatever is new, the stack left.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { runInHost } from "../../../sim/hosts";
import { PROJECT_ROOT } from "./stack";

/**
 * The checkout and the folders its top-level links lead to (its tools, where the local Pulumi CLI logs
 * each run under the stack's name, when they are shared with another checkout).
 */
function checkoutPaths(): string[] {
  const linked = fs.readdirSync(PROJECT_ROOT, { withFileTypes: true }).filter((e) => e.isSymbolicLink()).map((e) => fs.realpathSync(path.join(PROJECT_ROOT, e.name)));
  return [...new Set([PROJECT_ROOT, fs.realpathSync(PROJECT_ROOT), ...linked])];
}

/**
 * The bound on one listing. It walks the whole root file system (tens of thousands of files beside the
 * checkout), and on a machine whose other lanes keep both cores busy and its directory cache cold it
 * took more than the 30 s a host command gets by default.
 */
const HOST_FILES_TIMEOUT_MS = 180_000;

/** Every path on the host that is the stack's or lies in the login's home and scratch folders, one a line. */
export async function hostFiles(alias: string, stack: string): Promise<string[]> {
  // /var/lib/narwhal-fleet is shared by every simulated host (and other stacks); the homes and /tmp are the host's own.
  // The checkout is visible from the host too, wherever it lives: its local evidence and logs are not the host's.
  const prune = ["/proc", "/sys", ...checkoutPaths()].map((p) => `-path '${p}'`).join(" -o ");
  const r = await runInHost(alias, ["sh", "-c", `ls -A /var/lib/narwhal-fleet | grep -x ${stack}; find /root /home /tmp /var/tmp -xdev 2>/dev/null; find / -xdev \\( ${prune} \\) -prune -o -name '*${stack}*' -print 2>/dev/null; true`], { timeoutMs: HOST_FILES_TIMEOUT_MS });
  return r.stdout.split("\n").filter(Boolean).sort();
}

/** The host's listening TCP sockets (`address:port`), sorted. */
export async function hostListeners(alias: string): Promise<string[]> {
  const r = await runInHost(alias, ["sh", "-c", "ss -Hltn | awk '{print $4}'"]);
  return [...new Set(r.stdout.split("\n").filter(Boolean))].sort();
}

/** Those of `listeners` on any of `ports`. */
export function onPorts(listeners: string[], ports: number[]): string[] {
  return listeners.filter((l) => ports.some((p) => l.endsWith(`:${p}`)));
}

/**
 * One fabric measurement at a time from this program, whatever starts it: the component chains the
 * edges, and this lock makes the measurement itself refuse to overlap (two stacks, a second `pulumi up`,
 * a test calling the provider twice at once). The lock is a file under the program's `runs/` folder
 * holding the owner's pid, a per-acquisition token, the edge and the time; a dead owner's lock is taken over.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { randomUUID } from "node:crypto";
import { FabricError } from "./errors";

export const LOCK_FILE = path.join("runs", "fabric-measurement.lock");
const POLL_MS = 200;

interface Holder {
  pid: number;
  token: string;
  edge: string;
  stack: string;
  since: string;
}

/** Tokens this process holds right now: our pid in the file with another token is a leftover. */
const held = new Set<string>();

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

function readHolder(file: string): Holder | null | "unreadable" {
  try {
    const h = JSON.parse(fs.readFileSync(file, "utf8")) as Holder;
    return Number.isInteger(h.pid) && typeof h.token === "string" ? h : "unreadable";
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "ENOENT" ? null : "unreadable";
  }
}

function stale(h: Holder): boolean {
  return h.pid === process.pid ? !held.has(h.token) : !alive(h.pid);
}

/**
 * Runs `fn` holding the lock. Waits up to `waitS` for another measurement to finish, then throws
 * `NARWHAL_FABRIC_BUSY` naming the edge and process that hold it.
 */
export async function withMeasurementLock<T>(root: string, who: { edge: string; stack: string }, waitS: number, fn: () => Promise<T>): Promise<T> {
  const file = path.join(root, LOCK_FILE);
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const mine: Holder = { pid: process.pid, token: randomUUID(), edge: who.edge, stack: who.stack, since: "" };
  const deadline = Date.now() + waitS * 1000;
  let unreadableSince: number | null = null;
  for (;;) {
    try {
      fs.writeFileSync(file, JSON.stringify({ ...mine, since: new Date().toISOString() }), { flag: "wx", mode: 0o600 });
      held.add(mine.token);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    const h = readHolder(file);
    // A file caught between its create and its write reads as unreadable for a moment; longer, it is a leftover.
    unreadableSince = h === "unreadable" ? (unreadableSince ?? Date.now()) : null;
    if ((h !== null && h !== "unreadable" && stale(h)) || (unreadableSince !== null && Date.now() - unreadableSince > 5_000)) {
      fs.rmSync(file, { force: true });
      continue;
    }
    if (Date.now() >= deadline) {
      const by = h && h !== "unreadable" ? `edge ${h.edge} of stack ${h.stack} (pid ${h.pid}, since ${h.since})` : "an unreadable holder";
      throw new FabricError(
        "NARWHAL_FABRIC_BUSY",
        `edge ${who.edge}: another fabric measurement is running: ${by} holds ${LOCK_FILE}; waited lockWaitS=${waitS}s. ` +
          "The mesh is measured one edge at a time: let that measurement finish first.",
      );
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  try {
    return await fn();
  } finally {
    held.delete(mine.token);
    const h = readHolder(file);
    if (h && h !== "unreadable" && h.token === mine.token) fs.rmSync(file, { force: true });
  }
}

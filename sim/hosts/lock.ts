/**
 * Serialises changes to the fleet: within one process by a promise chain, across processes (several
 * mocha runs, `npm run sim` while tests run) by an exclusive lock file holding the owner's pid.
 * A lock whose owner is dead is taken over.
 */
import * as fs from "node:fs";
import { LOCK_TIMEOUT_MS, SIM_DIR } from "./constants";
import { pidAlive, SimError, sleep } from "./exec";
import { lockFile } from "./paths";

let chain: Promise<unknown> = Promise.resolve();

/** A lock file still empty after this long was left by a writer that died mid-create. */
const EMPTY_LOCK_GRACE_MS = 5_000;

export function withFleetLock<T>(what: string, fn: () => Promise<T>): Promise<T> {
  const next = chain.then(() => withFileLock(what, fn));
  chain = next.catch(() => undefined);
  return next;
}

function holderOf(file: string): { pid?: number; ageMs: number } | undefined {
  try {
    const text = fs.readFileSync(file, "utf8").trim();
    const ageMs = Date.now() - fs.statSync(file).mtimeMs;
    const pid = Number(text);
    return { pid: text !== "" && Number.isInteger(pid) ? pid : undefined, ageMs };
  } catch {
    return undefined; // gone between the failed create and this read: just retry
  }
}

async function withFileLock<T>(what: string, fn: () => Promise<T>): Promise<T> {
  fs.mkdirSync(SIM_DIR, { recursive: true });
  const file = lockFile();
  const deadline = Date.now() + LOCK_TIMEOUT_MS;
  for (;;) {
    try {
      fs.writeFileSync(file, String(process.pid), { flag: "wx" });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    const holder = holderOf(file);
    // Our own pid can only be a leftover: this process runs one locked section at a time.
    const stale =
      holder !== undefined &&
      (holder.pid === undefined ? holder.ageMs > EMPTY_LOCK_GRACE_MS : holder.pid === process.pid || !pidAlive(holder.pid));
    if (stale) {
      fs.rmSync(file, { force: true });
      continue;
    }
    if (Date.now() > deadline) {
      throw new SimError("SIM_LOCK_TIMEOUT", `sim ${what}: ${file} is held by pid ${holder?.pid ?? "?"} for more than LOCK_TIMEOUT_MS=${LOCK_TIMEOUT_MS} ms`);
    }
    await sleep(100);
  }
  try {
    return await fn();
  } finally {
    if (holderOf(file)?.pid === process.pid) fs.rmSync(file, { force: true });
  }
}

/**
 * scripts/object-store.sh, the project's long-lived store, run here over a folder and ports of this test's
 * own (NARWHAL_OBJECT_STORE_DIR, NARWHAL_OBJECT_STORE_PORT): after a stop that lost the master's state,
 * the next start takes writes again by itself. SeaweedFS freezes volume growth when its volume server
 * reports another cluster's topology id, and without the script's recovery wait no new bucket took a
 * write until someone ran `volume.growth.resume` (setup then waited out its 60 s bound on every run).
 */
import { expect } from "chai";
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { promisify } from "node:util";

const ROOT = path.resolve(__dirname, "..", "..");
const run = promisify(execFile);

/** Whether `port` on loopback can be bound now. */
const bindable = (port: number) =>
  new Promise<boolean>((resolve) => {
    const server = net.createServer().once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });

/** An S3 port P whose whole block (P to P+3, P+10000 to P+10003) is free. */
async function freeBlock(): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const p = 20_000 + Math.floor(Math.random() * 25_000);
    const block = [0, 1, 2, 3].flatMap((d) => [p + d, p + 10_000 + d]);
    if ((await Promise.all(block.map(bindable))).every(Boolean)) return p;
  }
  throw new Error("no free block of object store ports in 50 tries");
}

describe("scripts/object-store.sh: the project's store", function () {
  // Each start waits up to PORT_TIMEOUT_S + WRITE_TIMEOUT_S (120 s) for a write to go through.
  this.timeout(400_000);
  let dir: string;
  let env: NodeJS.ProcessEnv;
  const store = (...args: string[]) => run("bash", [path.join(ROOT, "scripts", "object-store.sh"), ...args], { cwd: ROOT, env, timeout: 150_000 });

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "narwhal-store-script-"));
    env = { ...process.env, NARWHAL_OBJECT_STORE_DIR: dir, NARWHAL_OBJECT_STORE_PORT: String(await freeBlock()) };
  });
  after(async () => {
    await store("stop").catch(() => undefined);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("takes writes again after a restart that lost the master's state", async () => {
    await store("start");
    expect((await store("bucket", "before-loss")).stdout).to.include("created bucket before-loss");
    await store("stop");
    // The master's Raft folder (m<master port>) gone, the volumes kept: the volume server reports the old
    // cluster's topology id to a master that starts a new one.
    const masterState = fs.readdirSync(path.join(dir, "data")).filter((f) => /^m\d+$/.test(f));
    expect(masterState, "the master's state folder").to.have.length(1);
    fs.rmSync(path.join(dir, "data", masterState[0]), { recursive: true });
    await store("start");
    expect((await store("bucket", "after-loss")).stdout).to.include("created bucket after-loss");
    const log = fs.readFileSync(path.join(dir, "weed.log"), "utf8");
    expect(log, "the freeze this test means to cause").to.match(/volume growth frozen: a volume server reports topology id/);
    expect(log).to.include("volume growth unfrozen after 10s");
  });
});

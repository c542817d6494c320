/**
 * Checkpoint identity over real SSH against the simulated fleet: the hashing script runs on each host
 * (python3 inside the host, one login per host), replicas are compared, and re-discovery after one
 * replica changes re-reads only the changed file. Needs root (the harness); leaves the fleet as found.
 */
import { expect } from "chai";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { compareReplicas, replicaDifferenceMessage } from "../../lib/checkpoint/compare";
import { DEFAULT_RACY_WINDOW_MS, HashResult } from "../../lib/checkpoint/driver";
import { CheckpointError } from "../../lib/checkpoint/errors";
import { isRetained } from "../../lib/checkpoint/manifest";
import { hashCheckpointRemote } from "../../lib/checkpoint/remote-hash";
import { SshSession } from "../../lib/ssh/client";
import { simUp, writeCheckpoint } from "../../sim/hosts";
import type { SimHost } from "../../sim/hosts";

const OPTS = { timeoutS: 60 };
const SHARD = "model-00002-of-00002.safetensors";

/** Resolves once every file in `dir` has a ctime outside the racy window of a scan starting now. */
async function settled(dir: string): Promise<void> {
  const newest = Math.max(...fs.readdirSync(dir).map((f) => fs.lstatSync(path.join(dir, f)).ctimeMs));
  const wait = newest + DEFAULT_RACY_WINDOW_MS + 50 - Date.now();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
}

describe("checkpoint identity over SSH (simulated fleet)", function () {
  this.timeout(120_000);
  let hosts: SimHost[];
  const sessions = new Map<string, SshSession>();
  const hash = (h: SimHost, previous?: HashResult) => hashCheckpointRemote(sessions.get(h.alias)!, h.modelDir, previous?.manifest, OPTS);

  before(async () => {
    ({ hosts } = await simUp({}));
    for (const h of hosts) {
      sessions.set(
        h.alias,
        await SshSession.open({
          alias: h.alias,
          host: h.address,
          port: h.sshPort,
          user: "root",
          privateKey: fs.readFileSync(h.privateKeyPath, "utf8"),
          hostKey: h.hostKey,
          allowFirstContact: false,
          connectTimeoutS: 10,
        }),
      );
      await settled(h.modelDirOnMachine);
    }
  });

  after(() => sessions.forEach((s) => s.close()));

  it("finds every replica identical, holding exactly the files the harness wrote (minus the root README.md)", async () => {
    const results = await Promise.all(hosts.map((h) => hash(h)));
    expect(compareReplicas(hosts.map((h, i) => ({ host: h.alias, manifest: results[i].manifest })))).to.equal(null);

    const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "ckpt-expected-"));
    try {
      const expected = writeCheckpoint(scratch).filter((f) => isRetained(f.path));
      expect(results[0].manifest.files.map((f) => [f.path, f.size, f.sha256])).to.deep.equal(expected.map((f) => [f.path, f.bytes, f.sha256]));
    } finally {
      fs.rmSync(scratch, { recursive: true, force: true });
    }
    expect(results[0].manifest.configSha256).to.be.a("string");
    expect(results[0].manifest.problems).to.deep.equal([]);
  });

  it("names the changed shard and both hosts, and re-discovery reads only that shard", async () => {
    const [ref, , changed] = hosts;
    const before = await Promise.all([hash(ref), hash(changed)]);
    const again = await hash(changed, before[1]);
    expect(again.rehashed, "an unchanged checkpoint is identified from stat alone").to.deep.equal([]);

    // Same size, one byte flipped, new inode: only the sha256 can tell. The original is moved aside
    // (outside the checkpoint directory) and moved back, so the replica ends byte-for-byte as it was.
    const shard = path.join(changed.modelDirOnMachine, SHARD);
    const aside = path.join(path.dirname(changed.modelDirOnMachine), `.${SHARD}.checkpoint-test-${process.pid}`);
    const bytes = fs.readFileSync(shard);
    bytes[bytes.length - 1] ^= 0xff;
    fs.renameSync(shard, aside);
    let differing: HashResult;
    try {
      fs.writeFileSync(shard, bytes);
      differing = await hash(changed, again);
    } finally {
      fs.renameSync(aside, shard);
    }
    expect(differing.rehashed).to.deep.equal([SHARD]);
    expect(differing.reused).to.have.length(again.reused.length - 1);

    const diff = compareReplicas([
      { host: ref.alias, manifest: before[0].manifest },
      { host: changed.alias, manifest: differing.manifest },
    ]);
    expect(diff?.path).to.equal(SHARD);
    expect(diff?.hosts).to.deep.equal([ref.alias, changed.alias]);
    expect(replicaDifferenceMessage(diff!)).to.match(
      new RegExp(`^checkpoint differs between hosts ${ref.alias} and ${changed.alias} at ${SHARD.replace(/\./g, "\\.")}: same size \\(\\d+ bytes\\) but sha256 [0-9a-f]{64} on ${ref.alias}, [0-9a-f]{64} on ${changed.alias}; stage the same snapshot`),
    );

    const restored = await hash(changed, differing);
    expect(restored.rehashed).to.deep.equal([SHARD]);
    expect(restored.manifest.modelTreeSha256).to.equal(before[0].manifest.modelTreeSha256);
  });

  it("names the host and the directory when the checkpoint is missing", async () => {
    const h = hosts[0];
    let err: unknown;
    await hashCheckpointRemote(sessions.get(h.alias)!, "/models/not-staged", undefined, OPTS).catch((e) => (err = e));
    expect(err).to.be.instanceOf(CheckpointError);
    expect((err as CheckpointError).message).to.equal(`host ${h.alias}: checkpoint directory /models/not-staged does not exist; stage the checkpoint there before discovery`);
  });
});

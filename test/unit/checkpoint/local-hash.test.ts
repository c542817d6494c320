/**
 * The remote hashing script, run locally on temporary trees: what it retains, that its digests are
 * coreutils', and that re-discovery reads only what changed.
 */
import { expect } from "chai";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { CheckpointError } from "../../../lib/checkpoint/errors";
import { HASH_SCRIPT } from "../../../lib/checkpoint/hash-script";
import { hashCheckpointLocal } from "../../../lib/checkpoint/local-hash";
import { modelTreeSha256 } from "../../../lib/checkpoint/manifest";
import { makeTree, pastRacyWindow, sha256sumOf, unprivilegedPython, writeFile } from "./fixture";

const TIMEOUT = { timeoutS: 30 };
const SHARD = Buffer.alloc(3 * 1024 * 1024 + 17, 7); // spans several 1 MiB reads, with a ragged tail

const TREE: Record<string, string | Buffer> = {
  "README.md": "# card\n",
  "config.json": '{"model_type":"llama"}\n',
  "model-00001-of-00002.safetensors": SHARD,
  "model-00002-of-00002.safetensors": Buffer.concat([SHARD, Buffer.from("tail")]),
  "tokenizer.json": "{}\n",
  "sub/README.md": "nested card, part of the model\n",
  ".cache/huggingface/download/config.json.metadata": "etag\n",
  ".cache/huggingface/.gitignore": "*\n",
  ".cache/other.txt": "kept\n",
};
const RETAINED = [
  ".cache/other.txt",
  "config.json",
  "model-00001-of-00002.safetensors",
  "model-00002-of-00002.safetensors",
  "sub/README.md",
  "tokenizer.json",
];

async function rejection(p: Promise<unknown>): Promise<CheckpointError> {
  try {
    await p;
  } catch (e) {
    expect(e).to.be.instanceOf(CheckpointError);
    return e as CheckpointError;
  }
  throw new Error("expected a rejection");
}

describe("checkpoint hash script (run locally)", function () {
  const made: string[] = [];
  const tree = (files: Record<string, string | Buffer>) => {
    const dir = makeTree(files);
    made.push(dir);
    return dir;
  };
  after(() => made.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

  it("fits in one argv word (Linux MAX_ARG_STRLEN is 128 KiB), as it travels in `python3 -c`", () => {
    expect(Buffer.byteLength(HASH_SCRIPT)).to.be.below(128 * 1024);
  });

  describe("a full hash", () => {
    let dir: string;
    before(() => (dir = tree(TREE)));

    it("keeps every regular file except the root README.md and .cache/huggingface/", async () => {
      const r = await hashCheckpointLocal(dir, undefined, TIMEOUT);
      expect(r.manifest.files.map((f) => f.path)).to.deep.equal(RETAINED);
      expect(r.manifest.problems).to.deep.equal([]);
    });

    it("gives each file coreutils' sha256sum and size, and reads all of them", async () => {
      const r = await hashCheckpointLocal(dir, undefined, TIMEOUT);
      const expected = sha256sumOf(dir, RETAINED);
      expect(Object.fromEntries(r.manifest.files.map((f) => [f.path, f.sha256]))).to.deep.equal(expected);
      for (const f of r.manifest.files) expect(f.size, f.path).to.equal(fs.statSync(path.join(dir, f.path)).size);
      expect(r.rehashed).to.deep.equal(RETAINED);
      expect(r.reused).to.deep.equal([]);
      expect(r.stats.bytesRead).to.equal(r.manifest.files.reduce((n, f) => n + f.size, 0));
    });

    it("derives the tree and config digests from those sums", async () => {
      const r = await hashCheckpointLocal(dir, undefined, TIMEOUT);
      const sums = sha256sumOf(dir, RETAINED);
      expect(r.manifest.modelTreeSha256).to.equal(modelTreeSha256(RETAINED.map((p) => ({ path: p, size: fs.statSync(path.join(dir, p)).size, sha256: sums[p] }))));
      expect(r.manifest.configSha256).to.equal(sums["config.json"]);
      expect(r.manifest.root).to.equal(dir);
    });

    it("uses as many workers as this process may use CPUs, or the number asked for", async () => {
      const nproc = Number(execFileSync("nproc", { encoding: "utf8" }).trim());
      expect((await hashCheckpointLocal(dir, undefined, TIMEOUT)).stats.workers).to.equal(nproc);
      expect((await hashCheckpointLocal(dir, undefined, { ...TIMEOUT, workers: 1 })).stats.workers).to.equal(1);
    });

    it("runs under Debian's /usr/bin/python3 too, with the same answer", async function () {
      if (!fs.existsSync("/usr/bin/python3")) this.skip();
      const a = await hashCheckpointLocal(dir, undefined, TIMEOUT);
      const b = await hashCheckpointLocal(dir, undefined, { ...TIMEOUT, python: "/usr/bin/python3" });
      expect(b.manifest.modelTreeSha256).to.equal(a.manifest.modelTreeSha256);
    });

    it("has no config digest when there is no root config.json", async () => {
      const r = await hashCheckpointLocal(tree({ "sub/config.json": "{}" }), undefined, TIMEOUT);
      expect(r.manifest.configSha256).to.equal(null);
    });
  });

  describe("re-discovery with the previous manifest", () => {
    // One untouched tree per test, all made before a single wait, so no test sees another's fresh ctimes.
    const ready: string[] = [];
    let dir: string;
    before(async () => {
      for (let i = 0; i < 8; i++) ready.push(tree(TREE));
      await pastRacyWindow();
    });
    beforeEach(() => {
      dir = ready.pop()!;
    });

    it("reads nothing when nothing changed", async () => {
      const first = await hashCheckpointLocal(dir, undefined, TIMEOUT);
      const again = await hashCheckpointLocal(dir, first.manifest, TIMEOUT);
      expect(again.rehashed).to.deep.equal([]);
      expect(again.reused).to.deep.equal(RETAINED);
      expect(again.stats.bytesRead).to.equal(0);
      expect(again.manifest.modelTreeSha256).to.equal(first.manifest.modelTreeSha256);
    });

    it("re-reads only a touched file (same bytes, new mtime)", async () => {
      const first = await hashCheckpointLocal(dir, undefined, TIMEOUT);
      const t = new Date(Date.now() + 5000);
      fs.utimesSync(path.join(dir, "tokenizer.json"), t, t);
      const again = await hashCheckpointLocal(dir, first.manifest, TIMEOUT);
      expect(again.rehashed).to.deep.equal(["tokenizer.json"]);
      expect(again.manifest.modelTreeSha256).to.equal(first.manifest.modelTreeSha256);
    });

    it("re-reads only a file rewritten in place at the same size, and sees the new bytes", async () => {
      const first = await hashCheckpointLocal(dir, undefined, TIMEOUT);
      const file = path.join(dir, "model-00001-of-00002.safetensors");
      const fd = fs.openSync(file, "r+");
      fs.writeSync(fd, Buffer.from([9]), 0, 1, SHARD.length - 1);
      fs.closeSync(fd);
      const again = await hashCheckpointLocal(dir, first.manifest, TIMEOUT);
      expect(again.rehashed).to.deep.equal(["model-00001-of-00002.safetensors"]);
      expect(again.manifest.files.find((f) => f.path === "model-00001-of-00002.safetensors")?.sha256).to.equal(
        sha256sumOf(dir, ["model-00001-of-00002.safetensors"])["model-00001-of-00002.safetensors"],
      );
      expect(again.manifest.modelTreeSha256).to.not.equal(first.manifest.modelTreeSha256);
    });

    it("re-reads a grown file", async () => {
      const first = await hashCheckpointLocal(dir, undefined, TIMEOUT);
      fs.appendFileSync(path.join(dir, "tokenizer.json"), "\n");
      const again = await hashCheckpointLocal(dir, first.manifest, TIMEOUT);
      expect(again.rehashed).to.deep.equal(["tokenizer.json"]);
    });

    it("re-reads a file replaced by another inode even with the same size, bytes and mtime", async () => {
      const first = await hashCheckpointLocal(dir, undefined, TIMEOUT);
      const file = path.join(dir, "config.json");
      const { mtime, atime } = fs.statSync(file);
      fs.copyFileSync(file, `${file}.new`);
      fs.renameSync(`${file}.new`, file);
      fs.utimesSync(file, atime, mtime);
      const again = await hashCheckpointLocal(dir, first.manifest, TIMEOUT);
      expect(again.rehashed).to.deep.equal(["config.json"]);
      expect(again.manifest.files.find((f) => f.path === "config.json")?.fingerprint.inode).to.not.equal(
        first.manifest.files.find((f) => f.path === "config.json")?.fingerprint.inode,
      );
    });

    it("sees added and removed files", async () => {
      const first = await hashCheckpointLocal(dir, undefined, TIMEOUT);
      writeFile(dir, "added.py", "print(1)\n");
      fs.rmSync(path.join(dir, "sub/README.md"));
      const again = await hashCheckpointLocal(dir, first.manifest, TIMEOUT);
      expect(again.rehashed).to.deep.equal(["added.py"]);
      expect(again.manifest.files.map((f) => f.path)).to.include("added.py").and.not.include("sub/README.md");
    });

    it("re-reads a file changed within the racy window of the last scan, then trusts it once it is older", async () => {
      const first = await hashCheckpointLocal(dir, undefined, TIMEOUT);
      fs.appendFileSync(path.join(dir, "tokenizer.json"), " ");
      const second = await hashCheckpointLocal(dir, first.manifest, TIMEOUT);
      expect(second.rehashed).to.deep.equal(["tokenizer.json"]);
      // Unchanged since, but its ctime is too close to `second`'s start to prove a later same-tick write absent.
      const third = await hashCheckpointLocal(dir, second.manifest, TIMEOUT);
      expect(third.rehashed).to.deep.equal(["tokenizer.json"]);
      await pastRacyWindow();
      const fourth = await hashCheckpointLocal(dir, third.manifest, TIMEOUT);
      const fifth = await hashCheckpointLocal(dir, fourth.manifest, TIMEOUT);
      expect(fifth.rehashed).to.deep.equal([]);
    });

    it("does not reuse a manifest taken of another directory", async () => {
      const first = await hashCheckpointLocal(dir, undefined, TIMEOUT);
      const copy = tree(TREE);
      const r = await hashCheckpointLocal(copy, first.manifest, TIMEOUT);
      expect(r.reused).to.deep.equal([]);
    });
  });

  describe("links and special files", () => {
    it("hashes links to files, and records links that leave the directory, dangle, or point at directories", async () => {
      const outside = tree({ "blob.bin": "outside bytes" });
      const dir = tree({ "config.json": "{}", "real/weights.bin": "w" });
      fs.symlinkSync("real/weights.bin", path.join(dir, "inside-link.bin"));
      fs.symlinkSync(path.join(outside, "blob.bin"), path.join(dir, "outside-link.bin"));
      fs.symlinkSync("nowhere.bin", path.join(dir, "dangling.bin"));
      fs.symlinkSync("real", path.join(dir, "dir-link"));
      execFileSync("mkfifo", [path.join(dir, "pipe")]);
      const r = await hashCheckpointLocal(dir, undefined, TIMEOUT);
      expect(r.manifest.files.map((f) => f.path)).to.deep.equal(["config.json", "inside-link.bin", "outside-link.bin", "real/weights.bin"]);
      expect(r.manifest.files.find((f) => f.path === "outside-link.bin")?.sha256).to.equal(sha256sumOf(outside, ["blob.bin"])["blob.bin"]);
      expect(r.manifest.problems.map((p) => [p.path, p.kind])).to.deep.equal([
        ["dangling.bin", "dangling_symlink"],
        ["dir-link", "symlinked_directory"],
        ["outside-link.bin", "symlink_outside_root"],
        ["pipe", "not_a_regular_file"],
      ]);
      expect(r.manifest.problems.find((p) => p.kind === "symlink_outside_root")?.detail).to.equal(`target ${fs.realpathSync(path.join(outside, "blob.bin"))}`);
    });
  });

  describe("errors", () => {
    it("names a missing directory", async () => {
      const e = await rejection(hashCheckpointLocal("/nonexistent/models/x", undefined, TIMEOUT));
      expect(e.code).to.equal("NARWHAL_CHECKPOINT_MISSING_DIR");
      expect(e.message).to.equal("local: checkpoint directory /nonexistent/models/x does not exist; stage the checkpoint there before discovery");
    });

    it("names a path that is not a directory", async () => {
      const dir = tree({ "config.json": "{}" });
      const e = await rejection(hashCheckpointLocal(path.join(dir, "config.json"), undefined, TIMEOUT));
      expect(e.code).to.equal("NARWHAL_CHECKPOINT_NOT_A_DIRECTORY");
      expect(e.message).to.equal(`local: checkpoint path ${dir}/config.json is not a directory`);
    });

    it("names an unreadable file", async function () {
      const scratch = tree({});
      const python = unprivilegedPython(scratch);
      if (!python) this.skip();
      const dir = tree({ "config.json": "{}", "weights.bin": "w" });
      await pastRacyWindow();
      const first = await hashCheckpointLocal(dir, undefined, { ...TIMEOUT, python });
      fs.chmodSync(path.join(dir, "weights.bin"), 0o000);
      const e = await rejection(hashCheckpointLocal(dir, first.manifest, { ...TIMEOUT, python }));
      expect(e.code).to.equal("NARWHAL_CHECKPOINT_UNREADABLE");
      expect(e.message).to.equal(`local: cannot read ${dir}/weights.bin in checkpoint ${dir}: Permission denied`);
    });

    it("refuses a file name the canonical manifest cannot carry", async () => {
      const dir = tree({ "bad\tname.bin": "x" });
      const e = await rejection(hashCheckpointLocal(dir, undefined, TIMEOUT));
      expect(e.code).to.equal("NARWHAL_CHECKPOINT_NAME");
      expect(e.message).to.match(/bad\tname\.bin: file name contains a tab or newline/);
    });

    it("stops itself at its deadline and says so", async () => {
      const dir = tree({ "big.bin": Buffer.alloc(64 * 1024 * 1024, 1) });
      const e = await rejection(hashCheckpointLocal(dir, undefined, { timeoutS: 0.001 }));
      expect(e.code).to.equal("NARWHAL_CHECKPOINT_TIMEOUT");
      expect(e.message).to.equal(`local: hashing checkpoint ${dir} did not finish within 0.001s`);
    });

    it("says when there is no python3", async () => {
      const e = await rejection(hashCheckpointLocal(os.tmpdir(), undefined, { ...TIMEOUT, python: "/nonexistent/python3" }));
      expect(e.code).to.equal("NARWHAL_CHECKPOINT_NO_PYTHON");
    });

    it("refuses a relative directory: the remote login's working directory is not a checkpoint path", async () => {
      const e = await rejection(hashCheckpointLocal("models/x", undefined, TIMEOUT));
      expect(e.message).to.equal('local: checkpoint directory must be an absolute path, got "models/x"');
    });
  });
});

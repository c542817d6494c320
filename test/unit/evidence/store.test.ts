import { expect } from "chai";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { canonicalJson, sha256Json } from "../../../lib/digest";
import { EvidenceStore, evidenceRoot } from "../../../lib/evidence/store";
import { filesUnder, modeOf, rejectionOf, sampleRecord, tempDirs } from "./helpers";

// sha256 of the canonical JSON of sampleRecord(); checked once against `sha256sum` of the file's bytes.
const SAMPLE_HEX = "2c011d6b064c9b37b6d1262ea8a1301311480380c7da6e0f896c9475c862e6e7";

describe("evidence store: writing records", () => {
  const dirs = tempDirs();

  it("names a record by the SHA-256 of its exact canonical bytes", async () => {
    const store = new EvidenceStore(dirs.root());
    const written = await store.write(sampleRecord());
    expect(written).to.deep.equal({ digest: `sha256:${SAMPLE_HEX}`, relativePath: `discovery/${SAMPLE_HEX}.json` });
    const file = path.join(dirs.root(), written.relativePath);
    expect(fs.readFileSync(file, "utf8")).to.equal(canonicalJson(sampleRecord()));
    expect(sha256Json(sampleRecord())).to.equal(written.digest);
    expect(execFileSync("sha256sum", [file], { encoding: "utf8" }).split(" ")[0]).to.equal(SAMPLE_HEX);
  });

  it("writes the same digest whatever order the caller's keys were in", async () => {
    const store = new EvidenceStore(dirs.root());
    const r = sampleRecord();
    const reordered = Object.fromEntries(Object.entries(r).reverse()) as typeof r;
    expect((await store.write(reordered)).digest).to.equal(`sha256:${SAMPLE_HEX}`);
  });

  it("makes files 0600 and every folder it creates 0700, whatever the umask", async () => {
    const old = process.umask(0o022);
    try {
      const store = new EvidenceStore(dirs.root());
      const { relativePath } = await store.write(sampleRecord());
      const artifact = await store.writeArtifact("discovery", "nvidia-smi.txt", "GPU 0: NVIDIA H100\n");
      for (const folder of ["runs", "runs/dev", "runs/dev/evidence", "runs/dev/evidence/discovery", "runs/dev/evidence/discovery/artifacts"]) {
        expect(modeOf(path.join(dirs.tmp(), folder)), folder).to.equal("700");
      }
      expect(modeOf(path.join(dirs.root(), relativePath))).to.equal("600");
      expect(modeOf(path.join(dirs.root(), artifact.relativePath))).to.equal("600");
    } finally {
      process.umask(old);
    }
  });

  it("brings a pre-existing folder of ours to 0700, and leaves another user's folder alone", async () => {
    fs.mkdirSync(path.join(dirs.root(), "discovery"), { recursive: true, mode: 0o755 });
    fs.chmodSync(dirs.root(), 0o755);
    fs.chmodSync(path.join(dirs.root(), "discovery"), 0o755);
    const uid = fs.statSync(dirs.root()).uid;
    await new EvidenceStore(dirs.root(), { owner: uid + 1 }).write(sampleRecord());
    expect(modeOf(dirs.root())).to.equal("755");
    expect(modeOf(path.join(dirs.root(), "discovery"))).to.equal("755");
    await new EvidenceStore(dirs.root(), { owner: uid }).write(sampleRecord());
    expect(modeOf(dirs.root())).to.equal("700");
    expect(modeOf(path.join(dirs.root(), "discovery"))).to.equal("700");
  });

  it("returns the same digest for an identical record and leaves the file untouched", async () => {
    const store = new EvidenceStore(dirs.root());
    const first = await store.write(sampleRecord());
    const file = path.join(dirs.root(), first.relativePath);
    const before = fs.statSync(file);
    expect(await store.write(sampleRecord())).to.deep.equal(first);
    const after = fs.statSync(file);
    expect([after.ino, after.mtimeMs]).to.deep.equal([before.ino, before.mtimeMs]);
    expect(filesUnder(dirs.root()).map((f) => path.relative(dirs.root(), f.file))).to.deep.equal([first.relativePath]);
  });

  it("never replaces a different file under a record's name", async () => {
    const store = new EvidenceStore(dirs.root());
    const folder = path.join(dirs.root(), "discovery");
    fs.mkdirSync(folder, { recursive: true, mode: 0o700 });
    const file = path.join(folder, `${SAMPLE_HEX}.json`);
    fs.writeFileSync(file, "altered", { mode: 0o600 });
    const error = await rejectionOf(store.write(sampleRecord()));
    expect(error.code).to.equal("NARWHAL_EVIDENCE_CONFLICT");
    expect(error.message).to.equal(
      `evidence file ${file} already exists with other bytes ` +
        "(sha256:4aa009153649a0a7c1425387f3da9c72330ad069ea9f69ce1640abe46f92a83b); it was not replaced. " +
        "A file named by its digest differs only when it was altered after it was written: keep it for inspection elsewhere and remove it",
    );
    expect(fs.readFileSync(file, "utf8")).to.equal("altered");
    expect(fs.readdirSync(folder)).to.deep.equal([`${SAMPLE_HEX}.json`]); // no temporary file left behind
  });

  it("accepts the same record written from many promises at once, leaving one file", async () => {
    const store = new EvidenceStore(dirs.root());
    const results = await Promise.all(Array.from({ length: 16 }, () => store.write(sampleRecord())));
    expect(new Set(results.map((r) => r.digest))).to.deep.equal(new Set([`sha256:${SAMPLE_HEX}`]));
    expect(fs.readdirSync(path.join(dirs.root(), "discovery"))).to.deep.equal([`${SAMPLE_HEX}.json`]);
    expect(await store.read(results[0].relativePath, results[0].digest)).to.deep.equal(sampleRecord());
  });

  it("writes distinct records concurrently from several stores on one root", async () => {
    const records = Array.from({ length: 8 }, (_, i) => sampleRecord({ stack: `dev${i}` }));
    const written = await Promise.all(records.map((r) => new EvidenceStore(dirs.root()).write(r)));
    expect(new Set(written.map((w) => w.digest)).size).to.equal(8);
    const listed = await new EvidenceStore(dirs.root()).list("discovery");
    expect(listed.map((l) => l.digest).sort()).to.deep.equal(written.map((w) => w.digest).sort());
  });

  it("refuses a record that does not have the record shape, naming every problem by path", async () => {
    const store = new EvidenceStore(dirs.root());
    const bad = { ...sampleRecord(), extra: 1, verdict: { status: "fail", reasons: [] } };
    const error = await rejectionOf(store.write(bad as never));
    expect(error.code).to.equal("NARWHAL_EVIDENCE_RECORD");
    expect(error.message).to.equal(
      [
        `evidence record "discovery" for host sim1 does not have the record shape:`,
        `  - verdict.reasons: a "fail" verdict needs at least one reason`,
        `  - (record): Unrecognized key: "extra"`,
      ].join("\n"),
    );
    expect(fs.existsSync(dirs.root())).to.equal(false);
  });

  it("refuses a record that ends before it starts", async () => {
    const error = await rejectionOf(new EvidenceStore(dirs.root()).write(sampleRecord({ endedAt: "2025-01-31T11:59:59.000Z" })));
    expect(error.message).to.equal(
      `evidence record "discovery" for host sim1 does not have the record shape:\n` +
        "  - endedAt: ends (2025-01-31T11:59:59.000Z) before it starts (2025-01-31T12:00:00.000Z)",
    );
  });
});

describe("evidence store: artifacts and listing", () => {
  const dirs = tempDirs();

  it("stores an artifact by digest and returns the entry a record lists", async () => {
    const store = new EvidenceStore(dirs.root());
    const bytes = Buffer.from("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)\n");
    const artifact = await store.writeArtifact("discovery", "nvidia-smi-L.txt", bytes);
    const hex = execFileSync("sha256sum", { input: bytes, encoding: "utf8" }).split(" ")[0];
    expect(artifact).to.deep.equal({ name: "nvidia-smi-L.txt", relativePath: `discovery/artifacts/${hex}`, sha256: `sha256:${hex}`, bytes: bytes.length });
    expect(await store.writeArtifact("discovery", "again.txt", bytes)).to.include({ relativePath: artifact.relativePath });
    expect((await store.readArtifact(artifact.relativePath, artifact.sha256)).equals(bytes)).to.equal(true);
    const withArtifact = sampleRecord({ artifacts: [artifact] });
    const written = await store.write(withArtifact);
    expect((await store.read(written.relativePath, written.digest)).artifacts).to.deep.equal([artifact]);
  });

  it("lists records by kind, sorted, without artifacts or temporary files", async () => {
    const store = new EvidenceStore(dirs.root());
    expect(await store.list()).to.deep.equal([]);
    const a = await store.write(sampleRecord());
    const b = await store.write(sampleRecord({ kind: "preflight", subject: { kind: "fleet", alias: "dev" } }));
    await store.writeArtifact("discovery", "x.txt", "x");
    fs.writeFileSync(path.join(dirs.root(), "discovery", ".tmp-1-abc"), "partial");
    expect(await store.list()).to.deep.equal([
      { kind: "discovery", ...a },
      { kind: "preflight", ...b },
    ]);
    expect(await store.list("preflight")).to.deep.equal([{ kind: "preflight", ...b }]);
    expect(await store.list("profile")).to.deep.equal([]);
  });

  it("refuses a kind that could name a folder outside its own", async () => {
    const store = new EvidenceStore(dirs.root());
    for (const kind of ["../x", "Discovery", ".tmp", "a/b", ""]) {
      const error = await rejectionOf(store.writeArtifact(kind, "x", "x"));
      expect(error.code, kind).to.equal("NARWHAL_EVIDENCE_PATH");
      expect(error.message).to.equal(`evidence kind ${JSON.stringify(kind)} is not allowed: expected lowercase letters, digits and "-", starting with a letter`);
    }
    expect(fs.existsSync(dirs.root())).to.equal(false);
  });

  it("puts a stack's evidence under runs/<stack>/evidence and refuses stack names that are paths", () => {
    expect(evidenceRoot("/p", "dev")).to.equal("/p/runs/dev/evidence");
    expect(() => evidenceRoot("/p", "../x")).to.throw('stack name "../x" cannot name a folder');
    expect(() => evidenceRoot("/p", "..")).to.throw('stack name ".." cannot name a folder');
  });
});

import { expect } from "chai";
import { checkpointProblemsMessage, compareReplicas, replicaDifferenceMessage } from "../../../lib/checkpoint/compare";
import { buildManifest, CheckpointManifest } from "../../../lib/checkpoint/manifest";

const A = "a".repeat(64);
const B = "b".repeat(64);

function manifest(files: Record<string, [number, string]>): CheckpointManifest {
  return buildManifest({
    root: "/models/m",
    files: Object.entries(files).map(([path, [size, sha256]]) => ({ path, size, sha256, fingerprint: { size, mtimeNs: "1", ctimeNs: "1", inode: "1" } })),
    scannedAtNs: "1",
  });
}

const base = { "config.json": [10, A], "model-00001.safetensors": [100, A], "tokenizer.json": [5, B] } as Record<string, [number, string]>;

describe("checkpoint replica comparison", () => {
  it("finds nothing when every replica holds the same files", () => {
    expect(compareReplicas([{ host: "h1", manifest: manifest(base) }, { host: "h2", manifest: manifest(base) }, { host: "h3", manifest: manifest(base) }])).to.equal(null);
  });

  it("has nothing to compare with fewer than two replicas", () => {
    expect(compareReplicas([])).to.equal(null);
    expect(compareReplicas([{ host: "h1", manifest: manifest(base) }])).to.equal(null);
  });

  it("names a file present on the reference host only", () => {
    const { "tokenizer.json": _, ...fewer } = base;
    const d = compareReplicas([{ host: "h1", manifest: manifest(base) }, { host: "h2", manifest: manifest(fewer) }]);
    expect(d).to.deep.equal({ path: "tokenizer.json", hosts: ["h1", "h2"], detail: "present on h1 (5 bytes), missing on h2" });
  });

  it("names a file present on the other host only", () => {
    const more = { ...base, "extra.py": [7, A] } as Record<string, [number, string]>;
    const d = compareReplicas([{ host: "h1", manifest: manifest(base) }, { host: "h2", manifest: manifest(more) }]);
    expect(d).to.deep.equal({ path: "extra.py", hosts: ["h1", "h2"], detail: "missing on h1, present on h2 (7 bytes)" });
  });

  it("names a size difference", () => {
    const grown = { ...base, "model-00001.safetensors": [101, A] } as Record<string, [number, string]>;
    const d = compareReplicas([{ host: "h1", manifest: manifest(base) }, { host: "h2", manifest: manifest(grown) }]);
    expect(d).to.deep.equal({ path: "model-00001.safetensors", hosts: ["h1", "h2"], detail: "h1 has 100 bytes, h2 has 101 bytes" });
  });

  it("names a content difference at equal size, with both digests", () => {
    const changed = { ...base, "config.json": [10, B] } as Record<string, [number, string]>;
    const d = compareReplicas([{ host: "h1", manifest: manifest(base) }, { host: "h2", manifest: manifest(changed) }]);
    expect(d).to.deep.equal({ path: "config.json", hosts: ["h1", "h2"], detail: `same size (10 bytes) but sha256 ${A} on h1, ${B} on h2` });
  });

  it("reports the first differing path in sorted order across all hosts, not the first host that differs", () => {
    const lateDiff = { ...base, "tokenizer.json": [5, A] } as Record<string, [number, string]>;
    const earlyDiff = { ...base, "model-00001.safetensors": [100, B] } as Record<string, [number, string]>;
    const d = compareReplicas([
      { host: "h1", manifest: manifest(base) },
      { host: "h2", manifest: manifest(lateDiff) },
      { host: "h3", manifest: manifest(earlyDiff) },
    ]);
    expect(d?.path).to.equal("model-00001.safetensors");
    expect(d?.hosts).to.deep.equal(["h1", "h3"]);
  });

  it("on a tie keeps the earlier host", () => {
    const changed = { ...base, "config.json": [10, B] } as Record<string, [number, string]>;
    const d = compareReplicas([
      { host: "h1", manifest: manifest(base) },
      { host: "h2", manifest: manifest(changed) },
      { host: "h3", manifest: manifest(changed) },
    ]);
    expect(d?.hosts).to.deep.equal(["h1", "h2"]);
  });

  it("does not depend on the order files were listed in", () => {
    const m = manifest(base);
    const shuffled = { ...m, files: [...m.files].reverse() };
    const changed = manifest({ ...base, "tokenizer.json": [5, A] });
    expect(compareReplicas([{ host: "h1", manifest: shuffled }, { host: "h2", manifest: m }])).to.equal(null);
    expect(compareReplicas([{ host: "h1", manifest: shuffled }, { host: "h2", manifest: { ...changed, files: [...changed.files].reverse() } }])?.path).to.equal("tokenizer.json");
  });

  it("builds the discovery error message", () => {
    expect(replicaDifferenceMessage({ path: "model-00002-of-00002.safetensors", hosts: ["sim1", "sim3"], detail: "sim1 has 4 bytes, sim3 has 5 bytes" })).to.equal(
      "checkpoint differs between hosts sim1 and sim3 at model-00002-of-00002.safetensors: sim1 has 4 bytes, sim3 has 5 bytes; " +
        "stage the same snapshot on every engine host before discovery continues",
    );
  });

  it("describes a host's directory problems in one line, or null when there are none", () => {
    const m = manifest(base);
    expect(checkpointProblemsMessage("h1", m)).to.equal(null);
    const withProblems = { ...m, problems: [{ path: "model.safetensors", kind: "symlink_outside_root" as const, detail: "target /blobs/x" }] };
    expect(checkpointProblemsMessage("h1", withProblems)).to.equal(
      "host h1: checkpoint /models/m is not a self-contained snapshot: model.safetensors (symlink outside root: target /blobs/x); " +
        "stage every file as a regular file inside the directory",
    );
  });
});

import { expect } from "chai";
import { buildManifest, canonicalManifestText, comparePaths, isRetained, ManifestEntry, modelTreeSha256 } from "../../../lib/checkpoint/manifest";

const fp = { size: 0, mtimeNs: "1", ctimeNs: "1", inode: "1" };
const entry = (path: string, size: number, sha256: string): ManifestEntry => ({ path, size, sha256, fingerprint: { ...fp, size } });

// sha256 of '{"a":1}\n', "x" and "abc", from coreutils sha256sum.
const TINY = [
  entry("weights.bin", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
  entry("config.json", 8, "e346432021b04179518d9614f3560ccd71354a4ee101ddcb893d6959a9d6301c"),
  entry("sub/README.md", 1, "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"),
];

describe("checkpoint manifest", () => {
  describe("the runbook's exclusion rule", () => {
    const cases: Array<[string, boolean]> = [
      ["README.md", false],
      ["sub/README.md", true],
      ["readme.md", true],
      ["README.md.bak", true],
      [".cache/huggingface/download/model.safetensors.metadata", false],
      [".cache/huggingface/.gitignore", false],
      [".cache/other/file", true],
      [".cache/huggingface.json", true],
      ["sub/.cache/huggingface/x", true],
      ["model-00001-of-00002.safetensors", true],
    ];
    for (const [path, kept] of cases) it(`${kept ? "keeps" : "drops"} ${path}`, () => expect(isRetained(path)).to.equal(kept));
  });

  describe("ordering", () => {
    it("sorts by UTF-8 bytes: '.' before '/', U+FFFD before an astral character", () => {
      const paths = ["a/b", "a.b", "\u{1F600}", "\uFFFD", "B", "a"];
      expect([...paths].sort(comparePaths)).to.deep.equal(["B", "a", "a.b", "a/b", "\uFFFD", "\u{1F600}"]);
    });
  });

  describe("canonical form and tree hash", () => {
    it("is sorted `path\\tsize\\tsha256\\n` lines", () => {
      expect(canonicalManifestText(TINY)).to.equal(
        "config.json\t8\te346432021b04179518d9614f3560ccd71354a4ee101ddcb893d6959a9d6301c\n" +
          "sub/README.md\t1\t2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881\n" +
          "weights.bin\t3\tba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\n",
      );
    });
    it("hashes a fixed tiny tree to a known digest (printf ... | sha256sum)", () => {
      expect(modelTreeSha256(TINY)).to.equal("fc82300321204a0ce2d27242844f3bb96735a4e5c9e2ba64a6b6f710a283e47e");
    });
    it("hashes the empty tree to sha256 of nothing", () => {
      expect(modelTreeSha256([])).to.equal("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    });
    it("ignores fingerprints: replicas staged at different times share one identity", () => {
      const restaged = TINY.map((e) => ({ ...e, fingerprint: { size: e.size, mtimeNs: "99", ctimeNs: "99", inode: "7" } }));
      expect(buildManifest({ root: "/b", files: restaged, scannedAtNs: "5" }).modelTreeSha256).to.equal(
        buildManifest({ root: "/a", files: TINY, scannedAtNs: "1" }).modelTreeSha256,
      );
    });
  });

  describe("buildManifest", () => {
    it("sorts files and takes configSha256 from the root config.json only", () => {
      const m = buildManifest({ root: "/models/x", files: TINY, scannedAtNs: "1" });
      expect(m.files.map((f) => f.path)).to.deep.equal(["config.json", "sub/README.md", "weights.bin"]);
      expect(m.configSha256).to.equal("e346432021b04179518d9614f3560ccd71354a4ee101ddcb893d6959a9d6301c");
      expect(m.modelTreeSha256).to.equal("fc82300321204a0ce2d27242844f3bb96735a4e5c9e2ba64a6b6f710a283e47e");
      const nested = buildManifest({ root: "/m", files: [entry("sub/config.json", 8, TINY[1].sha256)], scannedAtNs: "1" });
      expect(nested.configSha256).to.equal(null);
    });
    it("refuses entries the canonical form cannot carry", () => {
      const sha = TINY[0].sha256;
      const build = (files: ManifestEntry[]) => () => buildManifest({ root: "/m", files, scannedAtNs: "1" });
      expect(build([entry("a\tb", 1, sha)])).to.throw('unusable path "a\\tb"');
      expect(build([entry("../a", 1, sha)])).to.throw('unusable path "../a"');
      expect(build([entry("/a", 1, sha)])).to.throw('unusable path "/a"');
      expect(build([entry("a", 1, sha.toUpperCase())])).to.throw("a: bad sha256");
      expect(build([entry("a", -1, sha)])).to.throw("a: bad size -1");
      expect(build([entry("a", 1, sha), entry("a", 1, sha)])).to.throw("a listed twice");
      expect(build([entry("README.md", 1, sha)])).to.throw("README.md is excluded by the runbook's filter");
    });
  });
});

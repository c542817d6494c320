import { expect } from "chai";
import * as fs from "node:fs";
import * as path from "node:path";
import { EvidenceStore } from "../../../lib/evidence/store";
import { filesUnder, rejectionOf, sampleRecord, tempDirs } from "./helpers";

const SAMPLE_HEX = "2c011d6b064c9b37b6d1262ea8a1301311480380c7da6e0f896c9475c862e6e7";

describe("evidence store: symbolic links are never followed", () => {
  const dirs = tempDirs();
  let elsewhere = "";
  beforeEach(() => {
    elsewhere = path.join(dirs.tmp(), "elsewhere");
    fs.mkdirSync(elsewhere, { mode: 0o700 });
  });

  it("refuses a root that is a symbolic link, naming it", async () => {
    fs.mkdirSync(path.dirname(dirs.root()), { recursive: true });
    fs.symlinkSync(elsewhere, dirs.root());
    const store = new EvidenceStore(dirs.root());
    for (const attempt of [() => store.write(sampleRecord()), () => store.writeArtifact("discovery", "x", "x"), () => store.list()]) {
      const error = await rejectionOf(attempt());
      expect(error.code).to.equal("NARWHAL_EVIDENCE_SYMLINK");
      expect(error.message).to.equal(`evidence folder ${dirs.root()} is a symbolic link; the store does not follow links, remove it or choose another root`);
    }
    expect(fs.readdirSync(elsewhere)).to.deep.equal([]);
  });

  it("refuses a kind folder or an artifacts folder that is a symbolic link", async () => {
    fs.mkdirSync(path.join(dirs.root(), "profile"), { recursive: true, mode: 0o700 });
    fs.symlinkSync(elsewhere, path.join(dirs.root(), "discovery"));
    fs.symlinkSync(elsewhere, path.join(dirs.root(), "profile", "artifacts"));
    const store = new EvidenceStore(dirs.root());
    const cases: Array<[() => Promise<unknown>, string]> = [
      [() => store.write(sampleRecord()), path.join(dirs.root(), "discovery")],
      [() => store.writeArtifact("profile", "samples.json", "[]"), path.join(dirs.root(), "profile", "artifacts")],
      [() => store.list("discovery"), path.join(dirs.root(), "discovery")],
      [() => store.list(), path.join(dirs.root(), "discovery")],
    ];
    for (const [attempt, folder] of cases) {
      const error = await rejectionOf(attempt());
      expect(error.code).to.equal("NARWHAL_EVIDENCE_SYMLINK");
      expect(error.message).to.match(new RegExp(`^evidence folder ${folder} is a symbolic link; the store does not follow links`));
    }
    expect(fs.readdirSync(elsewhere)).to.deep.equal([]);
  });

  it("refuses a symbolic link planted at a record's name, and leaves both the link and its target alone", async () => {
    const folder = path.join(dirs.root(), "discovery");
    fs.mkdirSync(folder, { recursive: true, mode: 0o700 });
    const victim = path.join(elsewhere, "victim");
    fs.writeFileSync(victim, "precious");
    const file = path.join(folder, `${SAMPLE_HEX}.json`);
    fs.symlinkSync(victim, file);
    const error = await rejectionOf(new EvidenceStore(dirs.root()).write(sampleRecord()));
    expect(error.code).to.equal("NARWHAL_EVIDENCE_SYMLINK");
    expect(error.message).to.equal(
      `evidence file ${file} is a symbolic link (not followed); the store does not follow or replace it. Remove it and write again`,
    );
    expect(fs.readlinkSync(file)).to.equal(victim);
    expect(fs.readFileSync(victim, "utf8")).to.equal("precious");
    expect(fs.readdirSync(folder)).to.deep.equal([`${SAMPLE_HEX}.json`]);
  });

  it("refuses a dangling symbolic link at a record's name without creating its target", async () => {
    const folder = path.join(dirs.root(), "discovery");
    fs.mkdirSync(folder, { recursive: true, mode: 0o700 });
    const target = path.join(elsewhere, "created-through-link");
    fs.symlinkSync(target, path.join(folder, `${SAMPLE_HEX}.json`));
    expect((await rejectionOf(new EvidenceStore(dirs.root()).write(sampleRecord()))).code).to.equal("NARWHAL_EVIDENCE_SYMLINK");
    expect(fs.existsSync(target)).to.equal(false);
  });

  it("reads nothing through a symbolic link at a record or on its folder", async () => {
    const store = new EvidenceStore(dirs.root());
    const written = await store.write(sampleRecord());
    const file = path.join(dirs.root(), written.relativePath);
    // Move the real record elsewhere and leave a link to it: the bytes would match, the path is not ours.
    fs.renameSync(file, path.join(elsewhere, "moved.json"));
    fs.symlinkSync(path.join(elsewhere, "moved.json"), file);
    const error = await rejectionOf(store.read(written.relativePath, written.digest));
    expect(error.code).to.equal("NARWHAL_EVIDENCE_INVALID");
    expect(error.message).to.equal(`evidence ${file} is invalid: expected ${written.digest}, found a symbolic link (not followed)`);

    fs.unlinkSync(file);
    fs.renameSync(path.join(elsewhere, "moved.json"), path.join(elsewhere, path.basename(file)));
    fs.rmdirSync(path.dirname(file));
    fs.symlinkSync(elsewhere, path.dirname(file));
    expect(await store.verify(written.relativePath, written.digest)).to.deep.equal({
      valid: false,
      reason: `evidence ${file} is invalid: expected ${written.digest}, found a symbolic link (not followed) at ${path.dirname(file)}`,
    });
    expect(filesUnder(elsewhere).map((f) => path.basename(f.file))).to.deep.equal([path.basename(file)]);
  });
});

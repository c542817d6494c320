import { expect } from "chai";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { EvidenceStore } from "../../../lib/evidence/store";
import { providerEvidence } from "../../../lib/evidence/provider-evidence";
import { appendLogLine } from "../../../lib/evidence/append-log";
import { rejectionOf, sampleRecord } from "./helpers";

/**
 * A store the file system refuses: one line naming the store and the cause, and nothing under it. Tests
 * run as root, whom a chmod does not stop, so the store sits on a read-only bind mount (skipped where
 * mounting is not allowed), and a file where a folder should be stands in for the rest (ENOTDIR).
 */
describe("evidence store: a store that refuses writes", () => {
  let tmp: string;
  beforeEach(() => (tmp = fs.mkdtempSync(path.join(os.tmpdir(), "narwhal-unwritable-"))));
  afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

  const oneLine = (root: string, cause: string) =>
    `evidence store ${root} refuses writes: ${cause}; nothing was recorded as measured. Make ${root} writable and run again`;

  it("on a read-only file system: names the store and EROFS, leaves no .tmp file, records nothing", async function () {
    const root = path.join(tmp, "evidence");
    fs.mkdirSync(root);
    try {
      execFileSync("sh", ["-c", `mount --bind '${root}' '${root}' && mount -o remount,bind,ro '${root}'`], { stdio: "ignore" });
    } catch {
      this.skip(); // no mount privilege here: the ENOTDIR case below still covers the message
    }
    try {
      const err = await rejectionOf(new EvidenceStore(root).write(sampleRecord()));
      expect(err.code).to.equal("NARWHAL_EVIDENCE_UNWRITABLE");
      expect(err.message).to.equal(oneLine(root, "the file system is read-only (EROFS)"));
      expect(err.message).to.not.include("\n").and.not.include(".tmp-");
      expect(fs.readdirSync(root)).to.deep.equal([]);
    } finally {
      execFileSync("umount", [root]);
    }
  });

  it("with a file where the store's folder should be (ENOTDIR), through the providers' writer too", async () => {
    fs.writeFileSync(path.join(tmp, "runs"), "not a folder");
    const root = path.join(tmp, "runs", "st", "evidence");
    const err = await rejectionOf(new EvidenceStore(root).write(sampleRecord()));
    expect(err.code).to.equal("NARWHAL_EVIDENCE_UNWRITABLE");
    expect(err.message).to.equal(oneLine(root, "a file stands where a folder of the store should be (ENOTDIR)"));
    // providerEvidence is what every provider writes through: its rejection is the same single line, so the resource fails.
    const cwd = process.cwd();
    process.chdir(tmp);
    try {
      const { stack: _s, sourceRevision: _r, ...fields } = sampleRecord();
      const viaProvider = await rejectionOf(providerEvidence("st").record(fields));
      expect(viaProvider.message).to.equal(oneLine(root, "a file stands where a folder of the store should be (ENOTDIR)"));
    } finally {
      process.chdir(cwd);
    }
  });

  it("the append-only logs beside the records refuse the same way", async () => {
    fs.writeFileSync(path.join(tmp, "runs"), "not a folder");
    const root = path.join(tmp, "runs", "st", "evidence");
    const err = await rejectionOf(appendLogLine(root, "image-check", "e1.jsonl", "{}"));
    expect(err.code).to.equal("NARWHAL_EVIDENCE_UNWRITABLE");
    expect(err.message).to.equal(oneLine(root, "a file stands where a folder of the store should be (ENOTDIR)"));
  });
});

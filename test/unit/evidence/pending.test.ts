import { expect } from "chai";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { EvidenceStore, evidenceRoot } from "../../../lib/evidence/store";
import { providerEvidence, type EvidenceRef } from "../../../lib/evidence/provider-evidence";
import { createKeepingEvidence, pendingRoot } from "../../../lib/evidence/pending";
import { rejectionOf, sampleRecord } from "./helpers";

/**
 * One kind's folder of the store read-only (a read-only bind mount: tests run as root, whom a chmod does
 * not stop): the refusal names that folder, the finished measurement is kept aside, and the next create of
 * the same inputs adopts it into the store without measuring again.
 */
describe("evidence store: a read-only kind folder, and a finished measurement kept aside", () => {
  let tmp: string;
  let cwd: string;
  let folder: string;
  beforeEach(function () {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), "narwhal-pending-"));
    cwd = process.cwd();
    folder = path.join(evidenceRoot(tmp, "st"), "discovery");
    fs.mkdirSync(folder, { recursive: true });
    try {
      execFileSync("sh", ["-c", `mount --bind '${folder}' '${folder}' && mount -o remount,bind,ro '${folder}'`], { stdio: "ignore" });
    } catch {
      this.skip(); // no mount privilege here
    }
    process.chdir(tmp);
  });
  afterEach(() => {
    process.chdir(cwd);
    try {
      execFileSync("umount", [folder], { stdio: "ignore" });
    } catch {
      // already unmounted by the test
    }
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  const { stack: _s, sourceRevision: _r, ...fields } = sampleRecord();
  const inputs = { stack: "st", alias: "sim1", password: "hunter2-secret" };

  it("names the folder that refused, not the store", async () => {
    const root = evidenceRoot(tmp, "st");
    const err = await rejectionOf(providerEvidence("st").record(fields));
    expect(err.code).to.equal("NARWHAL_EVIDENCE_UNWRITABLE");
    expect(err.message).to.equal(
      `evidence store ${root} refuses writes in discovery/: the file system is read-only (EROFS); nothing was recorded as measured. Make ${root}/discovery/ writable and run again`,
    );
  });

  it("keeps the finished measurement aside and adopts it on the next create of the same inputs, measuring once", async () => {
    let measured = 0;
    let ref: EvidenceRef | undefined;
    const create = async () => {
      measured++;
      ref = await providerEvidence("st").record(fields);
      return { id: "d1", outs: { ...inputs, evidence: ref, observed: 42 } };
    };
    const implementation = "dynamic-providers/host-discovery/provider.ts";
    const err = await rejectionOf(createKeepingEvidence(implementation, { ...inputs }, create));
    const aside = pendingRoot(tmp, "st");
    expect(err.message).to.include("refuses writes in discovery/").and.include(`The finished measurement is kept in ${aside}; the next pulumi up adopts it into the store without measuring again`);
    expect(fs.existsSync(path.join(aside, ref!.relativePath))).to.equal(true);
    // Nothing of the inputs is kept beside it: the next create brings them again.
    const kept = fs.readdirSync(path.join(aside, "results")).map((f) => fs.readFileSync(path.join(aside, "results", f), "utf8")).join("");
    expect(kept).to.not.include("hunter2-secret");

    // Still read-only: refused again the same way, still not measured again.
    expect((await rejectionOf(createKeepingEvidence(implementation, { ...inputs }, create))).message).to.include("refuses writes in discovery/");
    expect(measured).to.equal(1);

    execFileSync("umount", [folder]);
    const adopted = await createKeepingEvidence(implementation, { ...inputs }, create);
    expect(measured, "measured again").to.equal(1);
    expect(adopted).to.deep.equal({ id: "d1", outs: { ...inputs, evidence: ref, observed: 42 } });
    const store = new EvidenceStore(evidenceRoot(tmp, "st"));
    expect(await store.verify(ref!.relativePath, ref!.digest)).to.deep.equal({ valid: true });
    // Adopted once: the next create with these inputs measures.
    await createKeepingEvidence(implementation, { ...inputs }, create);
    expect(measured).to.equal(2);
  });

  it("other inputs are another measurement: nothing kept for them is adopted", async () => {
    let measured = 0;
    const create = async () => (measured++, { id: "d", outs: { ref: await providerEvidence("st").record(fields) } });
    await rejectionOf(createKeepingEvidence("p.ts", { ...inputs }, create));
    execFileSync("umount", [folder]);
    await createKeepingEvidence("p.ts", { ...inputs, alias: "sim2" }, create);
    expect(measured).to.equal(2);
  });
});

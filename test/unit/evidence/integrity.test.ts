import { expect } from "chai";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { canonicalJson } from "../../../lib/digest";
import { EvidenceStore } from "../../../lib/evidence/store";
import { rejectionOf, sampleRecord, tempDirs } from "./helpers";

describe("evidence store: reading and verifying", () => {
  const dirs = tempDirs();

  it("reads back exactly the record it wrote, and verifies it", async () => {
    const store = new EvidenceStore(dirs.root());
    const written = await store.write(sampleRecord());
    expect(await store.read(written.relativePath, written.digest)).to.deep.equal(sampleRecord());
    expect(await store.verify(written.relativePath, written.digest)).to.deep.equal({ valid: true });
  });

  it("detects a record whose bytes changed, naming the path and both digests", async () => {
    const store = new EvidenceStore(dirs.root());
    const written = await store.write(sampleRecord());
    const file = path.join(dirs.root(), written.relativePath);
    // A one-word edit that still parses and still has the record shape: only the digest can tell.
    fs.writeFileSync(file, canonicalJson(sampleRecord()).replace('"status":"pass"', '"status":"info"'));
    const tampered = "sha256:" + createHash("sha256").update(fs.readFileSync(file)).digest("hex");
    const expected = `evidence ${file} is invalid: expected ${written.digest}, found ${tampered}: its bytes changed after it was written`;
    const error = await rejectionOf(store.read(written.relativePath, written.digest));
    expect(error.code).to.equal("NARWHAL_EVIDENCE_INVALID");
    expect(error.message).to.equal(expected);
    expect(await store.verify(written.relativePath, written.digest)).to.deep.equal({ valid: false, reason: expected });
  });

  it("detects a truncated record, as a crash in the middle of a plain write would leave", async () => {
    const store = new EvidenceStore(dirs.root());
    const written = await store.write(sampleRecord());
    const file = path.join(dirs.root(), written.relativePath);
    fs.truncateSync(file, 10);
    const result = await store.verify(written.relativePath, written.digest);
    expect(result.valid).to.equal(false);
    expect(result).to.have.property("reason").that.matches(new RegExp(`^evidence ${file} is invalid: expected ${written.digest}, found sha256:[0-9a-f]{64}: its bytes changed`));
  });

  it("reports a record that is gone", async () => {
    const store = new EvidenceStore(dirs.root());
    const written = await store.write(sampleRecord());
    const file = path.join(dirs.root(), written.relativePath);
    fs.unlinkSync(file);
    const error = await rejectionOf(store.read(written.relativePath, written.digest));
    expect(error.code).to.equal("NARWHAL_EVIDENCE_INVALID");
    expect(error.message).to.equal(`evidence ${file} is invalid: expected ${written.digest}, found nothing`);
    fs.rmSync(dirs.root(), { recursive: true });
    expect(await store.verify(written.relativePath, written.digest)).to.deep.equal({
      valid: false,
      reason: `evidence ${file} is invalid: expected ${written.digest}, found nothing at ${dirs.root()}`,
    });
  });

  it("refuses a digest that is not the one the path is named for, and paths the store never writes", async () => {
    const store = new EvidenceStore(dirs.root());
    const written = await store.write(sampleRecord());
    const other = await store.write(sampleRecord({ stack: "prod" }));
    const file = path.join(dirs.root(), written.relativePath);
    expect(await store.verify(written.relativePath, other.digest)).to.deep.equal({
      valid: false,
      reason: `evidence ${file} is invalid: expected ${other.digest}, found a path named for ${written.digest}`,
    });
    for (const bad of ["../discovery/x.json", `/${written.relativePath}`, `discovery/../${written.relativePath}`, "discovery/x.json"]) {
      const error = await rejectionOf(store.read(bad, written.digest));
      expect(error.code, bad).to.equal("NARWHAL_EVIDENCE_INVALID");
      expect(error.message).to.equal(`evidence path ${JSON.stringify(bad)} is invalid: it is not a record path this store writes`);
    }
  });

  it("checks artifacts the same way", async () => {
    const store = new EvidenceStore(dirs.root());
    const artifact = await store.writeArtifact("fabric-edge", "iperf3.json", '{"end":{}}');
    expect(await store.verify(artifact.relativePath, artifact.sha256)).to.deep.equal({ valid: true });
    const file = path.join(dirs.root(), artifact.relativePath);
    fs.appendFileSync(file, " ");
    const result = await store.verify(artifact.relativePath, artifact.sha256);
    expect(result).to.have.property("reason").that.matches(new RegExp(`^evidence ${file} is invalid: expected ${artifact.sha256}, found sha256:`));
    expect((await rejectionOf(store.read(artifact.relativePath, artifact.sha256))).message).to.match(/is not a record path this store writes$/);
  });
});

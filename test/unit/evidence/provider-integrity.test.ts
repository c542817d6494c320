import { expect } from "chai";
import * as fs from "node:fs";
import * as path from "node:path";
import type * as pulumi from "@pulumi/pulumi";
import { EvidenceStore } from "../../../lib/evidence/store";
import { EVIDENCE_ALTERED, withEvidenceIntegrity } from "../../../dynamic-providers/integrity";
import { sampleRecord, tempDirs } from "./helpers";

/** A provider whose diff replaces on `input` and which never re-probes: the evidence check is all the wrapper adds. */
const inner: pulumi.dynamic.ResourceProvider = {
  async create(inputs) {
    return { id: "x", outs: inputs };
  },
  async diff(_id, olds, news) {
    const changed = olds.input !== news.input;
    return { changes: changed, replaces: changed ? ["input"] : [], deleteBeforeReplace: false };
  },
};

describe("dynamic providers: evidence integrity on refresh", () => {
  const dirs = tempDirs();
  const cwd = process.cwd();
  afterEach(() => process.chdir(cwd));

  async function stored(): Promise<{ props: Record<string, unknown>; file: string }> {
    process.chdir(dirs.tmp());
    const written = await new EvidenceStore(dirs.root()).write(sampleRecord());
    return { props: { stack: "dev", input: "a", evidence: { relativePath: written.relativePath, digest: written.digest } }, file: path.join(dirs.root(), written.relativePath) };
  }

  it("keeps a resource whose record still matches its digest", async () => {
    const { props } = await stored();
    const p = withEvidenceIntegrity(inner);
    const read = await p.read!("x", props);
    expect(read.props).to.deep.equal(props);
    expect(await p.diff!("x", read.props, { stack: "dev", input: "a" })).to.deep.equal({ changes: false, replaces: [], deleteBeforeReplace: false });
  });

  it("replaces, with the reason `evidence`, a resource whose record's bytes changed, beside its own reasons", async () => {
    const { props, file } = await stored();
    fs.chmodSync(file, 0o600);
    fs.appendFileSync(file, " ");
    const p = withEvidenceIntegrity(inner);
    const read = await p.read!("x", props);
    expect(read.props.evidenceAltered).to.deep.equal([(props.evidence as { relativePath: string }).relativePath]);
    expect(await p.diff!("x", read.props, { stack: "dev", input: "a" })).to.deep.equal({ changes: true, replaces: [EVIDENCE_ALTERED], deleteBeforeReplace: false });
    expect((await p.diff!("x", read.props, { stack: "dev", input: "b" })).replaces).to.deep.equal(["input", EVIDENCE_ALTERED]);
  });

  it("treats a record that is gone as altered, and forgets the finding once the file is whole again", async () => {
    const { props, file } = await stored();
    const bytes = fs.readFileSync(file);
    fs.rmSync(file);
    const p = withEvidenceIntegrity(inner);
    const gone = await p.read!("x", props);
    expect(gone.props.evidenceAltered).to.have.length(1);
    fs.writeFileSync(file, bytes, { mode: 0o600 });
    const back = await p.read!("x", gone.props);
    expect(back.props).to.not.have.property("evidenceAltered");
  });
});

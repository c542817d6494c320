/**
 * The evidence store on a real S3-compatible server (the project's SeaweedFS, a private instance with
 * authentication on): the same rules as the folder, checked from outside through the bucket itself. A
 * record written is readable and verified by digest, a changed object is named invalid, a second write
 * never replaces, a log grows line by line under concurrent appends, and a store that cannot be asked
 * says so instead of passing for altered evidence.
 */
import { expect } from "chai";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { EVIDENCE_STORE, IMPLEMENTATION } from "../../lib/shim-props";
import { S3Backend } from "../../lib/evidence/backends/s3";
import { appendLogLine } from "../../lib/evidence/append-log";
import { parseEvidenceLocation, type S3Location } from "../../lib/evidence/location";
import { alteredEvidence, providerEvidence } from "../../lib/evidence/provider-evidence";
import { S3Bucket } from "../../lib/evidence/s3/client";
import { withEvidenceLocation } from "../../lib/evidence/stack-store";
import { EvidenceStore } from "../../lib/evidence/store";
import { sampleRecord } from "../unit/evidence/helpers";
import { startObjectStore, type ObjectStoreServer } from "../support/object-store";

const BUCKET = "narwhal-evidence";
const STACK = "team";

describe("evidence store on S3 (SeaweedFS)", function () {
  this.timeout(180_000);
  let server: ObjectStoreServer;
  let url: string;
  let location: S3Location;
  let credentials: { accessKeyId: string; secretAccessKey: string };
  const backend = () => new S3Backend(location, STACK, credentials);
  /** The bucket as anyone holding the credentials sees it, bypassing the store's rules. */
  const raw = () => new S3Bucket({ endpoint: server.endpoint, bucket: BUCKET, region: server.region, name: "raw" }, credentials);

  before(async function () {
    this.timeout(180_000);
    server = await startObjectStore();
    credentials = { accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey };
    url = `s3://${BUCKET}/fleets?endpoint=${server.endpoint}&region=${server.region}`;
    location = parseEvidenceLocation(url) as S3Location;
    await raw().createBucket();
    // Provider calls take the store's credentials from the environment, as under the Pulumi CLI.
    process.env.AWS_ACCESS_KEY_ID = server.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = server.secretAccessKey;
  });
  after(async () => {
    delete process.env.AWS_ACCESS_KEY_ID;
    delete process.env.AWS_SECRET_ACCESS_KEY;
    await server?.stop();
  });

  it("keeps a record under <prefix>/<stack>/evidence by its digest, and reads it back verified", async () => {
    const store = new EvidenceStore(backend());
    const written = await store.write(sampleRecord());
    const key = `fleets/${STACK}/evidence/${written.relativePath}`;
    const object = await raw().get(key);
    expect(object, key).not.to.equal(undefined);
    expect(`sha256:${createHash("sha256").update(object!.bytes).digest("hex")}`).to.equal(written.digest);
    expect((await store.read(written.relativePath, written.digest)).kind).to.equal("discovery");
    expect(await store.verify(written.relativePath, written.digest)).to.deep.equal({ valid: true });
    expect((await store.list("discovery")).map((r) => r.relativePath)).to.include(written.relativePath);
  });

  it("writes the same record from several clients at once as one object, and refuses other bytes under its name", async () => {
    const record = sampleRecord({ subject: { kind: "host", alias: "sim7" } });
    const results = await Promise.all([1, 2, 3, 4].map(() => new EvidenceStore(backend()).write(record)));
    expect(new Set(results.map((r) => r.digest)).size).to.equal(1);
    const [written] = results;
    const other = Buffer.from("not the record");
    const err = await new EvidenceStore(backend()).adopt(written.relativePath, other).then(
      () => undefined,
      (e: Error & { code?: string }) => e,
    );
    expect(err?.code).to.equal("NARWHAL_EVIDENCE_INVALID"); // bytes that do not hash to the name are never sent
    const key = `fleets/${STACK}/evidence/${written.relativePath}`;
    expect((await raw().putIfAbsent(key, other))).to.equal("exists"); // nor does the bucket take them under that name
    expect(await new EvidenceStore(backend()).verify(written.relativePath, written.digest)).to.deep.equal({ valid: true });
  });

  it("names an object changed after it was written invalid, with both digests, and a removed one as gone", async () => {
    const store = new EvidenceStore(backend());
    const written = await store.write(sampleRecord({ subject: { kind: "host", alias: "sim8" } }));
    const key = `fleets/${STACK}/evidence/${written.relativePath}`;
    const before = (await raw().get(key))!;
    const altered = Buffer.from(before.bytes.toString("utf8").replace("gpu-node-17", "gpu-node-71"));
    expect(await raw().putIfUnchanged(key, altered, before.etag)).to.equal("created");
    const verdict = await store.verify(written.relativePath, written.digest);
    expect(verdict.valid).to.equal(false);
    const reason = (verdict as { reason: string }).reason;
    expect(reason).to.contain(`s3://${BUCKET}/${key}`).and.contain(written.digest).and.contain("its bytes changed after it was written");
    const gone = await store.verify(written.relativePath.replace(/[0-9a-f]{64}/, "0".repeat(64)), `sha256:${"0".repeat(64)}`);
    expect((gone as { reason: string }).reason).to.contain("found nothing");
  });

  it("keeps every line of a log appended to from several writers at once, at the offsets it reports", async () => {
    const lines = Array.from({ length: 8 }, (_, i) => JSON.stringify({ check: i }));
    const appended = await Promise.all(lines.map((line) => appendLogLine(backend(), "image-check", "e1.jsonl", line)));
    const log = (await raw().get(`fleets/${STACK}/evidence/image-check/logs/e1.jsonl`))!.bytes;
    expect(log.toString("utf8").trim().split("\n").sort()).to.deep.equal([...lines].sort());
    for (const [i, a] of appended.entries()) expect(log.subarray(a.offset, a.offset + a.bytes).toString("utf8")).to.equal(`${lines[i]}\n`);
  });

  it("is where a provider call writes and checks its evidence when the resource names the store", async () => {
    const ref = await withEvidenceLocation(url, () =>
      providerEvidence(STACK).record({
        kind: "discovery",
        subject: { kind: "host", alias: "sim9" },
        inputs: {},
        commands: [],
        startedAt: "2026-01-01T00:00:00.000Z",
        endedAt: "2026-01-01T00:00:01.000Z",
        observations: {},
        verdict: { status: "pass", reasons: [] },
        artifacts: [],
      }),
    );
    expect(await raw().get(`fleets/${STACK}/evidence/${ref.relativePath}`)).not.to.equal(undefined);
    // The same call with no store named checks the project's folder, where this record is not.
    expect(await withEvidenceLocation(url, () => alteredEvidence({ stack: STACK, evidence: ref }))).to.deep.equal([]);
    expect(await withEvidenceLocation(undefined, () => alteredEvidence({ stack: `${STACK}-nowhere`, evidence: ref }))).to.deep.equal([ref.relativePath]);
  });

  it("refuses wrong credentials as credentials, and a store that does not answer as unreachable, never as altered evidence", async () => {
    const written = await new EvidenceStore(backend()).write(sampleRecord({ subject: { kind: "host", alias: "sim10" } }));
    const wrong = new EvidenceStore(new S3Backend(location, STACK, { accessKeyId: credentials.accessKeyId, secretAccessKey: "not-the-secret" }));
    const refused = await wrong.verify(written.relativePath, written.digest).then(() => undefined, (e: Error & { code?: string }) => e);
    expect(refused?.code).to.equal("NARWHAL_EVIDENCE_CREDENTIALS");
    expect(refused?.message).not.to.contain("not-the-secret");
    const closed = parseEvidenceLocation(`s3://${BUCKET}?endpoint=http://127.0.0.1:9&region=us-east-1`) as S3Location;
    const down = await new EvidenceStore(new S3Backend(closed, STACK, credentials)).verify(written.relativePath, written.digest).then(
      () => undefined,
      (e: Error & { code?: string }) => e,
    );
    expect(down?.code).to.equal("NARWHAL_EVIDENCE_UNREACHABLE");
    expect(down?.message).to.contain("did not answer").and.contain("127.0.0.1:9");
  });
});

describe("a stack's evidence moved to S3 by the provider shim", function () {
  this.timeout(180_000);
  const STACK_MOVED = "provider-evidence-move";
  const FIXTURE = "test/fixtures/providers/recording.ts";
  let server: ObjectStoreServer;
  let url: string;

  before(async function () {
    this.timeout(180_000);
    server = await startObjectStore();
    url = `s3://${BUCKET}?endpoint=${server.endpoint}&region=${server.region}`;
    await new S3Bucket({ endpoint: server.endpoint, bucket: BUCKET, region: server.region, name: "raw" }, server).createBucket();
    process.env.AWS_ACCESS_KEY_ID = server.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = server.secretAccessKey;
  });
  after(async () => {
    delete process.env.AWS_ACCESS_KEY_ID;
    delete process.env.AWS_SECRET_ACCESS_KEY;
    fs.rmSync(path.join("runs", STACK_MOVED), { recursive: true, force: true });
    await server?.stop();
  });

  it("updates a resource in place when evidence.store changes, carrying its record and artifacts into the bucket and measuring nothing", async () => {
    const { dispatch } = await import("../../dynamic-providers/shim-host");
    const inputs = { stack: STACK_MOVED, value: 7, [IMPLEMENTATION]: FIXTURE };
    const created = (await dispatch("create", [inputs])) as { id: string; outs: Record<string, unknown> };
    const ref = created.outs.evidence as { relativePath: string; digest: string };
    expect(fs.existsSync(path.join("runs", STACK_MOVED, "evidence", ref.relativePath))).to.equal(true);

    const news = { ...inputs, [EVIDENCE_STORE]: url };
    const diff = (await dispatch("diff", [created.id, created.outs, news])) as { changes: boolean; replaces: string[] };
    expect(diff).to.deep.include({ changes: true, replaces: [] });
    const updated = (await dispatch("update", [created.id, created.outs, news])) as { outs: Record<string, unknown> };
    expect(updated.outs.evidence).to.deep.equal(ref);
    expect(updated.outs[EVIDENCE_STORE]).to.equal(url);

    const bucket = new S3Bucket({ endpoint: server.endpoint, bucket: BUCKET, region: server.region, name: "raw" }, server);
    const record = await bucket.get(`${STACK_MOVED}/evidence/${ref.relativePath}`);
    expect(record, "the record in the bucket").not.to.equal(undefined);
    const artifacts = (JSON.parse(record!.bytes.toString("utf8")) as { artifacts: Array<{ relativePath: string }> }).artifacts;
    expect(await bucket.get(`${STACK_MOVED}/evidence/${artifacts[0].relativePath}`), "its artifact").not.to.equal(undefined);

    // A refresh now checks the bucket: the folder's copy going away changes nothing.
    fs.rmSync(path.join("runs", STACK_MOVED), { recursive: true, force: true });
    const read = (await dispatch("read", [created.id, updated.outs])) as { props: Record<string, unknown> };
    expect(read.props.evidenceAltered).to.equal(undefined);
    expect(await dispatch("diff", [created.id, read.props, news])).to.deep.include({ changes: false });
  });
});

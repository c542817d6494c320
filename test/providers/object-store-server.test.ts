/**
 * The private SeaweedFS store a test file starts for itself (test/support/object-store.ts): it takes a write
 * signed with the credentials it returns, refuses the same request unsigned (S3 authentication is on), and
 * once stopped is gone: its port refuses connections and its directory is removed.
 */
import { expect } from "chai";
import * as fs from "node:fs";
import { signedRequest, startObjectStore, type ObjectStoreServer } from "../support/object-store";

describe("object store server: a private SeaweedFS S3 store per test file", function () {
  // Start-up waits up to OBJECT_STORE_READY_TIMEOUT_MS (90 s) for a write to go through.
  this.timeout(180_000);
  let server: ObjectStoreServer | undefined;

  before(async () => {
    server = await startObjectStore();
  });

  after(async () => {
    await server?.stop();
  });

  it("refuses an unsigned PUT /some-bucket with 403: authentication is on", async () => {
    const res = await fetch(`${server!.endpoint}/some-bucket`, { method: "PUT", signal: AbortSignal.timeout(10_000) });
    const text = await res.text();
    expect(res.status, text).to.equal(403);
    expect(text).to.contain("AccessDenied");
    // and made no bucket: its own credentials find none
    const list = await signedRequest(server!, "GET", "/");
    expect(list.status, list.text).to.equal(200);
    expect(list.text).not.to.contain("<Name>some-bucket</Name>");
  });

  it("takes the same PUT, and an object in the bucket, signed with its credentials", async () => {
    const bucket = await signedRequest(server!, "PUT", "/some-bucket");
    expect(bucket.status, bucket.text).to.equal(200);
    const put = await signedRequest(server!, "PUT", "/some-bucket/a/key.json", { body: '{"n":1}' });
    expect(put.status, put.text).to.equal(200);
    const get = await signedRequest(server!, "GET", "/some-bucket/a/key.json");
    expect(get).to.deep.equal({ status: 200, text: '{"n":1}' });
  });

  it("no longer answers on its port once stopped, and its directory is gone", async () => {
    const { endpoint, dataDir } = server!;
    await server!.stop();
    const err = await fetch(`${endpoint}/`, { signal: AbortSignal.timeout(10_000) }).then(
      () => undefined,
      (e: Error & { cause?: { code?: string } }) => e,
    );
    expect(err, "a stopped store answered").to.not.equal(undefined);
    expect(err!.cause?.code).to.equal("ECONNREFUSED");
    expect(fs.existsSync(dataDir)).to.equal(false);
  });
});

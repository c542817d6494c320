/** The ReplicaAgreement's check, as its check method runs it: each disagreement named by the list it is in, nothing judged while a record is unknown. */
import { expect } from "chai";
import { provider } from "../../../dynamic-providers/replica-agreement/provider";
import { UNKNOWN } from "../../../lib/unknown";
import { buildManifest } from "../../../lib/checkpoint/manifest";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { keptAttempt } from "../../support/kept-attempt";
import { EvidenceStore, evidenceRoot } from "../../../lib/evidence/store";

const manifest = (size: number) =>
  buildManifest({ root: "/models/m", files: [{ path: "config.json", size, sha256: "a".repeat(64), fingerprint: { size, mtimeNs: "1", ctimeNs: "1", inode: "1" } }], scannedAtNs: "1" });
const engine = (engineIndex: number, host: string, tensorParallelSize: number) => ({ engineIndex, id: `e${engineIndex}`, host, product: "NVIDIA H100 80GB HBM3", tensorParallelSize });
const inputs = (over: Record<string, unknown> = {}) => ({
  engines: [engine(0, "h1", 2), engine(1, "h2", 2)],
  checkpoints: [
    { host: "h1", manifest: manifest(10) },
    { host: "h2", manifest: manifest(10) },
  ],
  ...over,
});

describe("replica agreement provider: the check", () => {
  it("passes replicas that agree", async () => {
    expect((await provider.check!({}, inputs())).failures ?? []).to.deep.equal([]);
  });

  it("names the checkpoint difference and the shape that differs", async () => {
    const news = inputs({ engines: [engine(0, "h1", 2), engine(1, "h2", 1)], checkpoints: [{ host: "h1", manifest: manifest(10) }, { host: "h2", manifest: manifest(11) }] });
    const failures = (await provider.check!({}, news)).failures!;
    expect(failures).to.deep.equal([
      { property: "checkpoints", reason: "checkpoint differs between hosts h1 and h2 at config.json: h1 has 10 bytes, h2 has 11 bytes; stage the same snapshot on every engine host before discovery continues" },
      { property: "engines", reason: "engines[1].overrides.tensorParallelSize: engine e1 on host h2 runs TP 1, but engine e0 runs TP 2; all replicas must share one TP shape" },
    ]);
  });

  it("judges nothing while any record is unknown (a re-discovered host in a preview)", async () => {
    const news = inputs({ engines: [engine(0, "h1", 2), engine(1, "h2", 1)], checkpoints: UNKNOWN });
    expect(await provider.check!({}, news)).to.deep.equal({ inputs: news });
  });

  describe("with a stack", () => {
    const cwd = process.cwd();
    let dir: string;
    // The provider's store is runs/<stack>/evidence of the directory it runs in.
    beforeEach(() => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), "replicas-"));
      process.chdir(dir);
    });
    afterEach(() => {
      process.chdir(cwd);
      fs.rmSync(dir, { recursive: true, force: true });
    });

    const disagreeing = () =>
      inputs({ engines: [engine(0, "h1", 2), engine(1, "h2", 1)], checkpoints: [{ host: "h1", manifest: manifest(10) }, { host: "h2", manifest: manifest(11) }], stack: "dev" });
    const verdicts = async () => {
      const store = new EvidenceStore(evidenceRoot(dir, "dev"));
      const records = await Promise.all((await store.list("replica-agreement")).map((r) => store.read(r.relativePath, r.digest)));
      return records.sort((a, b) => (a.endedAt < b.endedAt ? -1 : 1)).map((r) => r.verdict.status);
    };

    it("keeps a disagreement as a fail record with each difference and the manifests it judged, and names it", async () => {
      const news = disagreeing();
      const failures = (await provider.check!({}, news)).failures!;
      expect(failures.map((f) => f.property)).to.deep.equal(["checkpoints", "engines"]);
      const { record, artifacts } = keptAttempt(failures[1].reason, "dev", dir);
      expect(record).to.deep.include({ kind: "replica-agreement", subject: { kind: "fleet", alias: "dev" }, commands: [] });
      expect(record.verdict.status).to.equal("fail");
      expect(record.verdict.reasons).to.have.length(2);
      expect(record.verdict.reasons[0]).to.match(/^checkpoints: checkpoint differs between hosts h1 and h2 at config.json/);
      expect(record.inputs.checkpoints).to.deep.equal([
        { host: "h1", modelTreeSha256: manifest(10).modelTreeSha256 },
        { host: "h2", modelTreeSha256: manifest(11).modelTreeSha256 },
      ]);
      expect(JSON.parse(artifacts["checkpoints.json"])).to.deep.equal(JSON.parse(JSON.stringify(news.checkpoints)));
    });

    it("writes nothing while replicas agree and none was refused", async () => {
      expect((await provider.check!({}, inputs({ stack: "dev" }))).failures ?? []).to.deep.equal([]);
      expect(fs.existsSync(path.join(dir, "runs"))).to.equal(false);
    });

    // Replicas can agree again with the inputs the resource already holds (a checkpoint put back), when no
    // update runs: without this pass record the refusal would stay the current step and fail Gate A.
    it("records the agreement that follows a refusal, once, so the refusal is no longer the current step", async () => {
      await provider.check!({}, disagreeing());
      await new Promise((r) => setTimeout(r, 5)); // records of one millisecond would tie
      expect((await provider.check!({}, inputs({ stack: "dev" }))).failures ?? []).to.deep.equal([]);
      expect((await provider.check!({}, inputs({ stack: "dev" }))).failures ?? []).to.deep.equal([]);
      expect(await verdicts()).to.deep.equal(["fail", "pass"]);
    });

    it("passes agreeing replicas whatever the store holds: a refusal record altered on disk stops no check", async () => {
      const failures = (await provider.check!({}, disagreeing())).failures!;
      const kept = /the failed attempt is kept as (\S+\.json)/.exec(failures[failures.length - 1].reason)![1];
      fs.appendFileSync(path.join(evidenceRoot(dir, "dev"), kept), " ");
      expect((await provider.check!({}, inputs({ stack: "dev" }))).failures ?? []).to.deep.equal([]);
    });
  });
});

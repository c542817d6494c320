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
import { exportDeploymentRecord } from "../../../lib/evidence/export";
import { ExportedDeploymentRecordSchema, STEP_FIELDS } from "../../../lib/evidence/export-schema";
import { gateLines } from "../../../lib/evidence/deployment-record";

const REV = "9b0cc90e0d1f2a3b4c5d6e7f8091a2b3c4d5e6f7";

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

    /** The stack's export as the operator's command writes it, checked against the export schema, and its Gate A. */
    const exportedGateA = async () => {
      const store = new EvidenceStore(evidenceRoot(dir, "dev"));
      const out = path.join(dir, `export-${++exports}`);
      await exportDeploymentRecord({ store, stack: "dev", aliases: { hosts: { h1: "gpu-h1", h2: "gpu-h2" } }, outDir: out, sourceRevision: REV });
      const parsed = ExportedDeploymentRecordSchema.safeParse(JSON.parse(fs.readFileSync(path.join(out, "deployment-record.json"), "utf8")));
      expect(parsed.success, JSON.stringify(parsed.error?.issues.slice(0, 3))).to.equal(true);
      const index = parsed.data!;
      return { gate: index.gates.find((g) => g.gate === "A")!, lines: gateLines(index) };
    };
    let exports = 0;
    const pause = () => new Promise((r) => setTimeout(r, 5)); // records of one millisecond would tie
    const keptPath = (failures: Array<{ reason: string }>) => /the failed attempt is kept as (\S+\.json)$/.exec(failures[failures.length - 1].reason)![1];

    it("keeps a disagreement as a fail record with each difference, the facts compared and the manifests it judged, and names it", async () => {
      const news = disagreeing();
      const failures = (await provider.check!({}, news)).failures!;
      expect(failures.map((f) => f.property)).to.deep.equal(["checkpoints", "engines"]);
      const { record, artifacts } = keptAttempt(failures[1].reason, "dev", dir);
      expect(record).to.deep.include({ kind: "replica-agreement", subject: { kind: "fleet", alias: "dev" }, commands: [] });
      expect(record.verdict.status).to.equal("fail");
      expect(record.verdict.reasons).to.have.length(2);
      expect(record.verdict.reasons[0]).to.match(/^checkpoints: checkpoint differs between hosts h1 and h2 at config.json/);
      expect(record.inputs.hosts).to.deep.equal(["h1", "h2"]);
      expect(record.inputs.checkpoints).to.deep.equal([
        { host: "h1", modelTreeSha256: manifest(10).modelTreeSha256 },
        { host: "h2", modelTreeSha256: manifest(11).modelTreeSha256 },
      ]);
      expect(record.observations.compared).to.deep.equal([
        { engine: "e0", host: "h1", product: "NVIDIA H100 80GB HBM3", tensorParallelSize: 2, modelTreeSha256: manifest(10).modelTreeSha256 },
        { engine: "e1", host: "h2", product: "NVIDIA H100 80GB HBM3", tensorParallelSize: 1, modelTreeSha256: manifest(11).modelTreeSha256 },
      ]);
      expect(record.observations.differences).to.deep.equal([
        {
          property: "checkpoints",
          checkpoint: { path: "config.json", hosts: ["h1", "h2"], detail: "h1 has 10 bytes, h2 has 11 bytes" },
          message: "checkpoint differs between hosts h1 and h2 at config.json: h1 has 10 bytes, h2 has 11 bytes; stage the same snapshot on every engine host before discovery continues",
        },
        {
          property: "engines",
          configPath: "engines[1].overrides.tensorParallelSize",
          message: "engines[1].overrides.tensorParallelSize: engine e1 on host h2 runs TP 1, but engine e0 runs TP 2; all replicas must share one TP shape",
        },
      ]);
      expect(JSON.parse(artifacts["checkpoints.json"])).to.deep.equal(JSON.parse(JSON.stringify(news.checkpoints)));

      // Exported, the refusal is Gate A's step with every runbook field, and fails the gate.
      const { gate, lines } = await exportedGateA();
      expect(gate.status).to.equal("fail");
      expect(lines[0]).to.equal("Gate A: fail: replica-agreement fleet dev");
      const [step] = gate.steps;
      for (const field of STEP_FIELDS) expect(step, field).to.have.property(field);
      expect(step).to.deep.include({ kind: "replica-agreement", subject: "fleet dev", hosts: ["h1", "h2"], commands: [], current: true });
      expect(step.record.relativePath).to.equal(keptPath(failures));
      expect(step.revisions).to.deep.equal({ program: record.sourceRevision, narwhal: null });
      expect(step.startingState).to.deep.equal({ kind: "nothing-before", note: "no earlier replica-agreement record of fleet dev in this stack's evidence store" });
      expect(step.artifacts.map((a) => [a.name, a.path])).to.deep.equal([["checkpoints.json", record.artifacts[0].relativePath]]);
    });

    it("keeps every refusal: a retry that disagrees again adds a second record, and the first stays as it was", async () => {
      const first = keptPath((await provider.check!({}, disagreeing())).failures!);
      const root = evidenceRoot(dir, "dev");
      const bytes = fs.readFileSync(path.join(root, first));
      await pause();
      const second = keptPath((await provider.check!({}, disagreeing())).failures!);
      expect(second).to.not.equal(first);
      expect(fs.readFileSync(path.join(root, first)).equals(bytes)).to.equal(true);
      expect(await verdicts()).to.deep.equal(["fail", "fail"]);

      const { gate } = await exportedGateA();
      expect(gate.status).to.equal("fail");
      expect(gate.steps.map((s) => [s.record.relativePath, s.verdict.status, s.current])).to.deep.equal([
        [first, "fail", false],
        [second, "fail", true],
      ]);
      // The retry starts from the refusal before it.
      expect(gate.steps[1].startingState).to.deep.include({ kind: "previous-record" });
      expect(gate.steps[1].startingState.kind === "previous-record" && gate.steps[1].startingState.record).to.deep.include({ relativePath: first, verdict: "fail" });
    });

    it("passes Gate A once replicas agree again, the refusals still listed as failed attempts; a newer refusal fails it again", async () => {
      const refused = [keptPath((await provider.check!({}, disagreeing())).failures!)];
      await pause();
      refused.push(keptPath((await provider.check!({}, disagreeing())).failures!));
      await pause();
      expect((await provider.check!({}, inputs({ stack: "dev" }))).failures ?? []).to.deep.equal([]);

      const { gate, lines } = await exportedGateA();
      expect(gate.status).to.equal("pass");
      expect(lines[0]).to.equal("Gate A: pass");
      expect(gate.steps.map((s) => [s.verdict.status, s.current])).to.deep.equal([
        ["fail", false],
        ["fail", false],
        ["pass", true],
      ]);
      expect(gate.steps.slice(0, 2).map((s) => s.record.relativePath)).to.deep.equal(refused);
      const agreed = gate.steps[2];
      expect(agreed.hosts).to.deep.equal(["h1", "h2"]);
      expect(agreed.startingState.kind === "previous-record" && agreed.startingState.record.relativePath).to.equal(refused[1]);
      // The agreement lists the refusals it ends, as the next success of other steps lists their kept attempts.
      const store = new EvidenceStore(evidenceRoot(dir, "dev"));
      const pass = await store.read(agreed.record.relativePath, agreed.record.digest);
      const listed = (pass.observations as { failedAttempts: Array<{ record: string; digest: string; verdict: string; reasons: string[] }> }).failedAttempts;
      expect(listed.map((a) => [a.record, a.digest, a.verdict])).to.deep.equal(gate.steps.slice(0, 2).map((s) => [s.record.relativePath, s.record.digest, "fail"]));
      expect(listed[0].reasons[0]).to.match(/^checkpoints: checkpoint differs between hosts h1 and h2/);

      await pause();
      const again = keptPath((await provider.check!({}, disagreeing())).failures!);
      const after = await exportedGateA();
      expect(after.gate.status).to.equal("fail");
      expect(after.gate.steps.filter((s) => s.current).map((s) => s.record.relativePath)).to.deep.equal([again]);
      await pause();
      await provider.check!({}, inputs({ stack: "dev" }));
      const newest = (await exportedGateA()).gate.steps.at(-1)!;
      const relisted = (await store.read(newest.record.relativePath, newest.record.digest)).observations as { failedAttempts: Array<{ record: string }> };
      expect(relisted.failedAttempts.map((a) => a.record)).to.deep.equal([again]);
    });

    it("writes nothing while replicas agree and none was refused", async () => {
      expect((await provider.check!({}, inputs({ stack: "dev" }))).failures ?? []).to.deep.equal([]);
      expect(fs.existsSync(path.join(dir, "runs"))).to.equal(false);
    });

    // Replicas can agree again with the inputs the resource already holds (a checkpoint put back), when no
    // update runs: without this pass record the refusal would stay the current step and fail Gate A.
    it("records the agreement that follows a refusal, once, so the refusal is no longer the current step", async () => {
      await provider.check!({}, disagreeing());
      await pause();
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

import { expect } from "chai";
import { GATES, gateOfKind } from "../../../lib/evidence/gates";
import { deploymentRecord, deploymentRecordEvidence, gateLines, type StoredRecord } from "../../../lib/evidence/deployment-record";
import { parseEvidenceRecord } from "../../../lib/evidence/record";
import { EVIDENCE_KINDS } from "../../../lib/evidence/record";
import { TRIAL_POINTS, trialRecord } from "../../fixtures/report/trial";
import { sampleRecord } from "./helpers";

const REV = "9b0cc90e0d1f2a3b4c5d6e7f8091a2b3c4d5e6f7";
const stored = (n: number, record: ReturnType<typeof sampleRecord>): StoredRecord => ({
  relativePath: `${record.kind}/${String(n).repeat(64).slice(0, 64)}.json`,
  digest: `sha256:${String(n).repeat(64).slice(0, 64)}`,
  record,
});

function edge(status: "pass" | "fail") {
  return sampleRecord({
    kind: "fabric-edge",
    subject: { kind: "edge", alias: "sim1->sim2" },
    startingState: { engines: "idle" },
    commands: [
      { argv: ["iperf3", "-s"], host: "sim2", exitStatus: 0, startedAt: "2025-01-31T12:01:00.000Z", endedAt: "2025-01-31T12:01:05.000Z" },
      { scriptSha256: "sha256:" + "c".repeat(64), host: "sim1", exitStatus: null, signal: "SIGKILL", startedAt: "2025-01-31T12:01:00.000Z", endedAt: "2025-01-31T12:01:04.000Z" },
    ],
    startedAt: "2025-01-31T12:01:00.000Z",
    endedAt: "2025-01-31T12:01:05.000Z",
    verdict: status === "fail" ? { status, reasons: ["below budget"] } : { status, reasons: [] },
    artifacts: [{ name: "iperf3.json", relativePath: `fabric-edge/artifacts/${"d".repeat(64)}`, sha256: `sha256:${"d".repeat(64)}`, bytes: 12 }],
  });
}

describe("evidence: deployment record", () => {
  it("puts every kind the store knows in exactly one gate, in runbook order", () => {
    expect(GATES.map((g) => g.gate)).to.deep.equal(["A", "B", "C", "D", "E", "F", "G"]);
    expect(GATES.find((g) => g.gate === "G")!.kinds).to.deep.equal(["router", "observability", "load-trial"]);
    const unclaimed = EVIDENCE_KINDS.filter((k) => k !== "deployment-record" && gateOfKind(k) === undefined);
    expect(unclaimed).to.deep.equal([]);
    const all = GATES.flatMap((g) => g.kinds);
    expect(new Set(all).size).to.equal(all.length);
  });

  it("keeps, per gate, host aliases, revision, starting state, commands, exit status and artifacts with paths", () => {
    const index = deploymentRecord("dev", [stored(1, sampleRecord()), stored(2, edge("pass"))]);
    const gateA = index.gates.find((g) => g.gate === "A")!;
    expect(gateA.status).to.equal("pass");
    expect(gateA.steps).to.have.length(1);
    expect(gateA.steps[0]).to.deep.include({
      kind: "discovery",
      subject: "host sim1",
      hosts: ["sim1"],
      sourceRevision: REV,
      revisions: { program: REV, narwhal: null },
      startingState: { kind: "recorded", value: { discovery: "none" } },
      record: { relativePath: `discovery/${"1".repeat(64)}.json`, digest: `sha256:${"1".repeat(64)}` },
      current: true,
    });
    expect(gateA.steps[0].commands).to.deep.equal([
      { host: "sim1", argv: ["nvidia-smi", "--query-gpu=index,pci.bus_id,name", "--format=csv,noheader"], exitStatus: 0 },
    ]);
    const gateD = index.gates.find((g) => g.gate === "D")!;
    expect(gateD.steps[0].hosts).to.deep.equal(["sim1", "sim2"]);
    expect(gateD.steps[0].commands[1]).to.deep.equal({ host: "sim1", scriptSha256: "sha256:" + "c".repeat(64), exitStatus: null, signal: "SIGKILL" });
    expect(gateD.steps[0].artifacts).to.deep.equal([{ name: "iperf3.json", path: `fabric-edge/artifacts/${"d".repeat(64)}`, sha256: `sha256:${"d".repeat(64)}`, bytes: 12 }]);
    expect(index.sourceRevisions).to.deep.equal([REV]);
    expect(index.gates.filter((g) => g.status === "not-recorded").map((g) => g.gate)).to.deep.equal(["B", "C", "E", "F", "G"]);
  });

  it("fails a gate whose current step failed, keeps unknown kinds apart and leaves other stacks and indexes out", () => {
    const other = sampleRecord({ stack: "prod" });
    const unknown = sampleRecord({ kind: "disk-check" });
    const oldIndex = sampleRecord({ kind: "deployment-record", subject: { kind: "fleet", alias: "dev" } });
    const index = deploymentRecord("dev", [stored(2, edge("pass")), stored(3, edge("fail")), stored(4, other), stored(5, unknown), stored(6, oldIndex)]);
    expect(index.gates.find((g) => g.gate === "D")!.status).to.equal("fail");
    expect(index.gates.find((g) => g.gate === "A")!.status).to.equal("not-recorded");
    expect(index.unassigned.map((s) => s.kind)).to.deep.equal(["disk-check"]);
  });

  it("keeps a failed attempt's record but lets the later measurement of the same subject decide the gate", () => {
    const retry = (status: "pass" | "fail", at: string) => ({ ...edge(status), startedAt: `2025-01-31T${at}:00.000Z`, endedAt: `2025-01-31T${at}:30.000Z` });
    const index = deploymentRecord("dev", [stored(7, retry("pass", "13:00")), stored(8, retry("fail", "12:30"))]);
    const gateD = index.gates.find((g) => g.gate === "D")!;
    expect(gateD.status).to.equal("pass");
    expect(gateD.steps.map((s) => [s.verdict.status, s.current])).to.deep.equal([["fail", false], ["pass", true]]);
    const later = deploymentRecord("dev", [stored(7, retry("pass", "12:30")), stored(8, retry("fail", "13:00"))]);
    expect(later.gates.find((g) => g.gate === "D")!.status).to.equal("fail");
  });

  it("names the host of a step about an engine when the config says where the engine runs", () => {
    const attestation = sampleRecord({ kind: "attestation", subject: { kind: "engine", alias: "e1" }, commands: [] });
    expect(deploymentRecord("dev", [stored(9, attestation)], { e1: "sim2" }).gates.find((g) => g.gate === "E")!.steps[0].hosts).to.deep.equal(["sim2"]);
    expect(deploymentRecord("dev", [stored(9, attestation)]).gates.find((g) => g.gate === "E")!.steps[0].hosts).to.deep.equal([]);
  });

  it("names the hosts a fleet-wide judgement compared (inputs.hosts), and no host for a fleet record that names none", () => {
    const judged = sampleRecord({ kind: "replica-agreement", subject: { kind: "fleet", alias: "dev" }, inputs: { hosts: ["sim2", "sim1"] }, commands: [] });
    expect(deploymentRecord("dev", [stored(9, judged)]).gates[0].steps[0].hosts).to.deep.equal(["sim1", "sim2"]);
    const config = sampleRecord({ kind: "deployment-config", subject: { kind: "fleet", alias: "dev" }, inputs: { "fleet.json": "sha256:" + "a".repeat(64) }, commands: [] });
    expect(deploymentRecord("dev", [stored(9, config)]).gates[0].steps[0].hosts).to.deep.equal([]);
    // Only a fleet-wide record names hosts this way: a host's own record is about its subject alone.
    const discovery = sampleRecord({ inputs: { hosts: ["sim2"] }, commands: [] });
    expect(deploymentRecord("dev", [stored(9, discovery)]).gates[0].steps[0].hosts).to.deep.equal(["sim1"]);
  });

  it("becomes a valid store record whose digest depends only on the evidence, and whose verdict names the gaps", () => {
    const records = [stored(1, sampleRecord()), stored(3, edge("fail"))];
    const a = deploymentRecordEvidence(deploymentRecord("dev", records), REV);
    const b = deploymentRecordEvidence(deploymentRecord("dev", [...records].reverse()), REV);
    expect(a).to.deep.equal(b);
    expect(parseEvidenceRecord(a)).to.deep.equal(a);
    expect(a.kind).to.equal("deployment-record");
    expect(a.subject).to.deep.equal({ kind: "fleet", alias: "dev" });
    expect(a.startedAt).to.equal("2025-01-31T12:01:05.000Z");
    expect(a.inputs).to.deep.equal({ [records[0].relativePath]: records[0].digest, [records[1].relativePath]: records[1].digest });
    expect(a.verdict.status).to.equal("fail");
    expect(a.verdict.reasons).to.include("Gate D failed: Prove the transfer fabric against the serving cache");
    expect(a.verdict.reasons).to.include("Gate B has no evidence record");
    expect(() => deploymentRecordEvidence(deploymentRecord("dev", []), REV)).to.throw("stack dev has no evidence records to put in a deployment record");
  });

  describe("Gate G's capacity trial", () => {
    const router = sampleRecord({ kind: "router", subject: { kind: "fleet", alias: "dev" }, commands: [], startedAt: "2026-11-29T14:30:00.000Z", endedAt: "2026-11-29T14:30:05.000Z" });
    const point = (n: number, i: number, verdictOverride?: string) => {
      const r = trialRecord("dev", TRIAL_POINTS[i], []);
      if (verdictOverride !== undefined) (r.observations as { verdict: string }).verdict = verdictOverride;
      return stored(n, r);
    };

    it("carries each point as a step with its trial verdict mapped, and fails the gate on a slo-miss or unreconciled point", () => {
      const index = deploymentRecord("dev", [stored(1, router), point(2, 0), point(3, 1), point(4, 2), point(5, 3)]);
      const gateG = index.gates.find((g) => g.gate === "G")!;
      expect(gateG.status).to.equal("fail");
      const trials = gateG.steps.filter((s) => s.kind === "load-trial");
      expect(trials.map((s) => [s.subject, s.trial, s.verdict.status])).to.deep.equal([
        ["fleet p1", { point: "p1", offeredRate: 1, verdict: "pass" }, "pass"],
        ["fleet p2", { point: "p2", offeredRate: 3, verdict: "pass" }, "pass"],
        ["fleet p3", { point: "p3", offeredRate: 5, verdict: "slo-miss" }, "fail"],
        ["fleet p4", { point: "p4", offeredRate: 6, verdict: "unreconciled" }, "fail"],
      ]);
      expect(trials[0].verdict.reasons).to.deep.equal([]);
      expect(trials[2].verdict.reasons.slice(0, 2)).to.deep.equal(["trial point p3: slo-miss", TRIAL_POINTS[2].reasons![0]]);
      // The reconciliation's causes are kept beside the verdict's reasons, each once.
      expect(trials[3].verdict.reasons.slice(0, 4)).to.deep.equal(["trial point p4: unreconciled", ...TRIAL_POINTS[3].reasons!, ...TRIAL_POINTS[3].causes!]);
      expect(trials.map((s) => s.artifacts)).to.deep.equal([[], [], [], []]);
      expect(gateLines(index).at(-1)).to.equal("Gate G: fail: load-trial fleet p3 (slo-miss), load-trial fleet p4 (unreconciled)");
      expect(deploymentRecordEvidence(index, REV).verdict.reasons).to.include("Gate G failed: Start the service and validate capacity through the private path");
    });

    it("passes Gate G only when every current point passes, whatever the record's own verdict says", () => {
      const passing = deploymentRecord("dev", [stored(1, router), point(2, 0), point(3, 1)]);
      expect(passing.gates.find((g) => g.gate === "G")!.status).to.equal("pass");
      expect(gateLines(passing).at(-1)).to.equal("Gate G: pass");
      // A record that says pass while its trial says slo-miss is a failed point.
      const lying = point(4, 2);
      lying.record.verdict = { status: "pass", reasons: [] };
      expect(deploymentRecord("dev", [stored(1, router), point(2, 0), lying]).gates.find((g) => g.gate === "G")!.status).to.equal("fail");
      // A record the provider failed for another reason stays failed though its trial passed.
      const broken = point(5, 0);
      broken.record.verdict = { status: "fail", reasons: ["tunnel.log could not be stored"] };
      const step = deploymentRecord("dev", [broken]).gates.find((g) => g.gate === "G")!.steps[0];
      expect(step.verdict).to.deep.equal({ status: "fail", reasons: ["tunnel.log could not be stored"] });
    });

    it("treats a trial record without a verdict as invalid evidence, never a pass", () => {
      const none = point(6, 0, undefined);
      delete (none.record.observations as { verdict?: string }).verdict;
      const odd = point(7, 1, "excellent");
      const gateG = deploymentRecord("dev", [stored(1, router), none, odd]).gates.find((g) => g.gate === "G")!;
      expect(gateG.status).to.equal("fail");
      expect(gateG.steps.filter((s) => s.kind === "load-trial").map((s) => [s.trial!.verdict, s.verdict.status, s.verdict.reasons[0]])).to.deep.equal([
        ["missing", "invalid", "trial point p1: the record carries no trial verdict (observations.verdict)"],
        ["missing", "invalid", 'trial point p2: unknown trial verdict "excellent"'],
      ]);
    });

    it("lets a re-run point supersede its earlier run, so a point that now passes passes the gate", () => {
      const miss = point(2, 2);
      const rerun = stored(3, { ...trialRecord("dev", { ...TRIAL_POINTS[2], verdict: "pass", reasons: [], at: "2026-11-29T15:10:00.000Z" }, []) });
      const gateG = deploymentRecord("dev", [stored(1, router), miss, rerun]).gates.find((g) => g.gate === "G")!;
      expect(gateG.steps.filter((s) => s.kind === "load-trial").map((s) => [s.trial!.verdict, s.current])).to.deep.equal([
        ["slo-miss", false],
        ["pass", true],
      ]);
      expect(gateG.status).to.equal("pass");
    });
  });
});

import { expect } from "chai";
import { GATES } from "../../../lib/evidence/gates";
import { HttpJournal } from "../../../lib/evidence/http-journal";
import { deploymentRecord, deploymentRecordEvidence, gateLines, type StoredRecord } from "../../../lib/evidence/deployment-record";
import { parseEvidenceRecord } from "../../../lib/evidence/record";
import { DeploymentRecordSchema, STEP_FIELDS } from "../../../lib/evidence/export-schema";
import { NARWHAL_KINDS } from "../../../lib/evidence/deployment-record";
import { sampleRecord } from "./helpers";

const REV = "narwhal-fleet@0.1.0+tree:0123456789abcdef";
let n = 0;
const stored = (record: ReturnType<typeof sampleRecord>): StoredRecord => {
  const hex = (++n).toString(16).padStart(64, "0");
  return { relativePath: `${record.kind}/${hex}.json`, digest: `sha256:${hex}`, record: parseEvidenceRecord(record) };
};

/** The HTTP commands a profile sweep would note: one GET, and 300 completions of which two got no answer. */
function httpCommands() {
  const journal = new HttpJournal({ "http://10.77.0.12:8000": "engine e0" });
  const at = (s: number) => `2025-01-31T12:05:${String(s).padStart(2, "0")}.000Z`;
  journal.note({ method: "GET", url: "http://10.77.0.12:8000/v1/models", status: 200, startedAt: at(0), endedAt: at(1) });
  for (let i = 0; i < 300; i++) journal.note({ method: "POST", url: "http://10.77.0.12:8000/v1/completions?x=1", status: i < 2 ? null : 200, startedAt: at(1), endedAt: at(2) });
  return journal.commands();
}

/** One record of every kind GATES lists, each on a subject of its own kind; the preflight degraded. */
function everyKind(): StoredRecord[] {
  const out: StoredRecord[] = [];
  for (const { kinds } of GATES) {
    for (const kind of kinds) {
      const subject = kind === "fabric-edge" ? { kind: "edge" as const, alias: "sim1->sim2" } : ["generation", "cache-capture", "attestation", "profile", "image-check"].includes(kind) ? { kind: "engine" as const, alias: "e0" } : ["discovery", "install", "router", "observability"].includes(kind) ? { kind: "host" as const, alias: "sim1" } : { kind: "fleet" as const, alias: "dev" };
      const http = ["generation", "cache-capture", "attestation", "profile", "preflight", "calibration", "load-trial"].includes(kind);
      out.push(
        stored(
          sampleRecord({
            kind,
            subject,
            sourceRevision: REV,
            startingState: undefined,
            commands: http ? httpCommands() : sampleRecord().commands,
            startedAt: "2025-01-31T12:05:00.000Z",
            endedAt: "2025-01-31T12:06:00.000Z",
            observations: kind === "install" ? { marker: { revision: "narwhal-inference==0.7.0" } } : kind === "preflight" ? { status: "degraded", skipped: [{ gate: "kv_contract", message: "no fabric edge for e0 -> e1" }] } : kind === "load-trial" ? { point: { id: "p1", rate: 2 }, verdict: "pass" } : {},
          }),
        ),
      );
    }
  }
  return out;
}

describe("evidence: the exported deployment record's schema", () => {
  it("validates a record holding every kind GATES lists, and every step carries every runbook field", () => {
    const index = deploymentRecord("dev", everyKind(), { e0: "sim2" });
    const parsed = DeploymentRecordSchema.safeParse(JSON.parse(JSON.stringify(index)));
    expect(parsed.success, JSON.stringify(parsed.error?.issues.slice(0, 3))).to.equal(true);
    const steps = index.gates.flatMap((g) => g.steps);
    expect(steps.map((s) => s.kind).sort()).to.deep.equal(GATES.flatMap((g) => g.kinds).sort());
    for (const step of steps) {
      for (const field of STEP_FIELDS) expect(step, `${step.kind}: ${field}`).to.have.property(field);
      expect(step.commands.length, `${step.kind} lists its commands`).to.be.greaterThan(0);
      for (const c of step.commands) expect(c, step.kind).to.have.property("exitStatus");
      expect(step.revisions.program).to.equal(REV);
      expect(step.revisions.narwhal, step.kind).to.equal(NARWHAL_KINDS.has(step.kind) ? "narwhal-inference==0.7.0" : null);
      expect(step.startingState.kind, step.kind).to.equal("nothing-before");
    }
  });

  it("summarises repeated requests as one command with a count and the statuses seen, with no query and no address", () => {
    const [models, completions] = httpCommands();
    expect(models).to.deep.include({ http: { method: "GET", target: "engine e0", path: "/v1/models", requests: 1 }, httpStatuses: { "200": 1 }, exitStatus: 0, host: "local" });
    expect(completions).to.deep.include({ http: { method: "POST", target: "engine e0", path: "/v1/completions", requests: 300 }, httpStatuses: { "200": 298, none: 2 }, exitStatus: null });
    const unnamed = new HttpJournal({});
    unnamed.note({ method: "GET", url: "http://127.0.0.1:9/health", status: 503, startedAt: "2025-01-31T12:00:00.000Z", endedAt: "2025-01-31T12:00:00.000Z" });
    expect(unnamed.commands()[0]).to.deep.include({ exitStatus: 1, httpStatuses: { "503": 1 } });
  });

  it("refuses an HTTP command whose statuses do not add up to its requests", () => {
    const [models] = httpCommands();
    expect(() => parseEvidenceRecord(sampleRecord({ commands: [{ ...models, httpStatuses: { "200": 2 } }] }))).to.throw(/expected the statuses of all 1 requests, got 2/);
    expect(() => parseEvidenceRecord(sampleRecord({ commands: [{ ...models, argv: ["curl"] }] }))).to.throw(/exactly one of argv, scriptSha256 and http/);
  });

  it("makes Gate F degraded, never pass, while the current preflight says degraded; a later full run passes it", () => {
    const records = everyKind();
    const index = deploymentRecord("dev", records);
    const gateF = index.gates.find((g) => g.gate === "F")!;
    expect(gateF.status).to.equal("degraded");
    expect(gateF.steps.find((s) => s.kind === "preflight")!.degraded).to.deep.equal(["kv_contract skipped: no fabric edge for e0 -> e1"]);
    expect(gateLines(index)).to.include("Gate F: degraded: preflight fleet dev");
    expect(deploymentRecordEvidence(index, REV).verdict.reasons[0]).to.match(/^Gate F is degraded: kv_contract skipped/);

    const preflight = records.find((r) => r.record.kind === "preflight")!.record;
    const full = stored(sampleRecord({ ...preflight, startedAt: "2025-01-31T13:00:00.000Z", endedAt: "2025-01-31T13:01:00.000Z", observations: { status: "pass", skipped: [] } }));
    const again = deploymentRecord("dev", [...records, full]).gates.find((g) => g.gate === "F")!;
    expect(again.status).to.equal("pass");
    const rerun = again.steps.find((s) => s.kind === "preflight" && s.current)!;
    // The re-run names the degraded run it started from.
    expect(rerun.startingState).to.deep.include({ kind: "previous-record" });
    expect(rerun.startingState.kind === "previous-record" && rerun.startingState.record.digest).to.equal(records.find((r) => r.record.kind === "preflight")!.digest);
  });

  it("makes a probe's gate degraded while its current record says its engines served other traffic; a reserved re-measure passes it", () => {
    const records = everyKind().filter((r) => r.record.kind !== "preflight");
    const busy = { idle: false, engines: [], reasons: ["engine e0 served 3 requests besides the probe's 40: it was not reserved, so its figures are not the runbook's idle figures"] };
    const edge = records.findIndex((r) => r.record.kind === "fabric-edge");
    records[edge] = stored(sampleRecord({ ...records[edge].record, observations: { reservation: busy } }));
    const index = deploymentRecord("dev", records);
    const gateD = index.gates.find((g) => g.gate === "D")!;
    expect(gateD.status).to.equal("degraded");
    expect(gateD.steps.find((s) => s.kind === "fabric-edge")!.degraded).to.deep.equal(busy.reasons);
    expect(DeploymentRecordSchema.safeParse(JSON.parse(JSON.stringify(index))).success).to.equal(true);

    const quiet = stored(sampleRecord({ ...records[edge].record, startedAt: "2025-01-31T13:00:00.000Z", endedAt: "2025-01-31T13:01:00.000Z", observations: { reservation: { idle: true, engines: [], reasons: [] } } }));
    expect(deploymentRecord("dev", [...records, quiet]).gates.find((g) => g.gate === "D")!.status).to.equal("pass");
  });

  it("fails the schema when a step loses a field", () => {
    const index = JSON.parse(JSON.stringify(deploymentRecord("dev", everyKind()))) as { gates: Array<{ steps: Array<Record<string, unknown>> }> };
    delete index.gates[0].steps[0].startingState;
    expect(DeploymentRecordSchema.safeParse(index).success).to.equal(false);
  });
});

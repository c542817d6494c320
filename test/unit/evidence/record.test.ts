import { expect } from "chai";
import { EVIDENCE_KINDS, evidenceRecord, parseEvidenceRecord } from "../../../lib/evidence/record";
import { sampleRecord } from "./helpers";

const command = sampleRecord().commands[0];

/** The problem lines of a refused record, without the heading. */
function problems(value: unknown): string[] {
  try {
    parseEvidenceRecord(value);
  } catch (error) {
    expect((error as { code?: string }).code).to.equal("NARWHAL_EVIDENCE_RECORD");
    return (error as Error).message.split("\n").slice(1);
  }
  throw new Error("expected the record to be refused");
}

describe("evidence: the record shape", () => {
  it("builds a record of the current schema from its fields", () => {
    const { schema, schemaVersion, ...fields } = sampleRecord();
    expect([schema, schemaVersion]).to.deep.equal(["narwhal-fleet.evidence", 1]);
    expect(evidenceRecord(fields)).to.deep.equal(sampleRecord());
    for (const kind of EVIDENCE_KINDS) expect(evidenceRecord({ ...fields, kind }).kind).to.equal(kind);
  });

  it("accepts a command killed by a signal, and a script run by digest", () => {
    const killed = { ...command, exitStatus: null, signal: "SIGKILL" };
    const script = { scriptSha256: `sha256:${"a".repeat(64)}`, host: "local", exitStatus: 3, startedAt: command.startedAt, endedAt: command.endedAt };
    expect(parseEvidenceRecord(sampleRecord({ commands: [killed, script] })).commands).to.deep.equal([killed, script]);
  });

  const refused: Array<[string, unknown, string[]]> = [
    ["an abbreviated revision", sampleRecord({ sourceRevision: "9b0cc90" }), ["  - sourceRevision: expected a full git revision (40 or 64 hex digits, optionally -dirty) or \"narwhal-fleet@<version>+tree:<hex>\""]],
    ["a kind that is not a folder name", sampleRecord({ kind: "../x" }), ['  - kind: expected a kind such as "discovery": lowercase letters, digits and "-"']],
    ["a local time", sampleRecord({ startedAt: "2025-01-31T13:00:00+01:00" }), ['  - startedAt: expected an ISO 8601 UTC time such as "2025-01-31T12:00:00.000Z"']],
    ["a command with both argv and a script", sampleRecord({ commands: [{ ...command, scriptSha256: `sha256:${"a".repeat(64)}` }] }), ["  - commands[0]: expected exactly one of argv, scriptSha256 and http"]],
    ["a command that ends before it starts", sampleRecord({ commands: [{ ...command, endedAt: "2025-01-31T11:00:00.000Z" }] }), ["  - commands[0].endedAt: ends (2025-01-31T11:00:00.000Z) before it starts (2025-01-31T12:00:00.000Z)"]],
    ["an invalid verdict without reasons", sampleRecord({ verdict: { status: "invalid", reasons: [] } }), ['  - verdict.reasons: a "invalid" verdict needs at least one reason']],
    ["a value JSON cannot hold", sampleRecord({ observations: { a: Number.NaN, b: undefined } as never }), ["  - observations: Invalid input"]],
    ["a digest in another form", sampleRecord({ artifacts: [{ name: "x", relativePath: `discovery/artifacts/${"a".repeat(64)}`, sha256: "a".repeat(64), bytes: 1 }] }), ['  - artifacts[0].sha256: expected "sha256:" and 64 lowercase hex digits']],
    ["a reason that would forge a log line", sampleRecord({ verdict: { status: "fail", reasons: ["ok\nPASS"] } }), ["  - verdict.reasons[0]: expected no control characters"]],
    ["an unknown field", { ...sampleRecord(), note: "x" }, ['  - (record): Unrecognized key: "note"']],
  ];
  for (const [what, value, lines] of refused) {
    it(`refuses ${what}`, () => {
      expect(problems(value)).to.deep.equal(lines);
    });
  }
});

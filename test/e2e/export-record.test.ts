/**
 * The operator's export of the shared fleet's deployment record, through the npm script: decrypts the
 * stack's secrets with its passphrase only to redact them, and leaves no simulated host's address, no
 * private path and no credential in what it writes.
 */
import { expect } from "chai";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type { DeploymentRecord } from "../../lib/evidence/deployment-record";
import { ExportedDeploymentRecordSchema, STEP_FIELDS } from "../../lib/evidence/export-schema";
import { NARWHAL_KINDS } from "../../lib/evidence/deployment-record";
import { API_KEY, PROJECT_ROOT, sharedFleet } from "./support/stack";

function filesUnder(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(path.join(dir, e.name)) : [path.join(dir, e.name)]));
}

describe("e2e: sanitised export of the deployment record", function () {
  this.timeout(1_200_000);
  let tmp: string;

  before(() => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), "export-record-e2e-"));
  });
  after(() => fs.rmSync(tmp, { recursive: true, force: true }));

  it("records every gate, A to G, and exports it with aliases only", async () => {
    const { stack, hosts, engines } = await sharedFleet();
    const out = path.join(tmp, "export");
    const printed = execFileSync("npm", ["run", "--silent", "export-record", "--", "--stack", stack.name, "--out", out], { cwd: PROJECT_ROOT, encoding: "utf8" });
    expect(printed).to.match(/^deployment record sha256:[0-9a-f]{64} \(deployment-record\/[0-9a-f]{64}\.json in the evidence store\)$/m);

    const files = filesUnder(out);
    expect(files.map((f) => path.relative(out, f))).to.include.members(["deployment-record.json", "manifest.json"]);
    const privateKey = fs.readFileSync(hosts[0].privateKeyPath, "utf8");
    const keyLine = privateKey.split("\n").find((l) => l.length > 40 && !l.startsWith("-----"))!;
    for (const file of files) {
      const text = fs.readFileSync(file, "utf8");
      for (const h of hosts) expect(text, `${file}: ${h.alias}'s address`).not.to.include(h.address);
      expect(text, file).not.to.match(/198\.18\.0\.\d/);
      for (const v of [API_KEY, keyLine, PROJECT_ROOT, "/var/lib/narwhal-fleet", hosts[0].modelDir, "root@"]) expect(text, `${file}: ${v}`).not.to.include(v);
    }

    const raw: unknown = JSON.parse(fs.readFileSync(path.join(out, "deployment-record.json"), "utf8"));
    const shape = ExportedDeploymentRecordSchema.safeParse(raw);
    expect(shape.success, JSON.stringify(shape.error?.issues.slice(0, 5))).to.equal(true);
    const index = raw as DeploymentRecord;
    for (const step of [...index.gates.flatMap((g) => g.steps), ...index.unassigned]) {
      for (const field of STEP_FIELDS) expect(step, `${step.kind} ${step.subject}: ${field}`).to.have.property(field);
      if (NARWHAL_KINDS.has(step.kind)) expect(step.revisions.narwhal, `${step.kind} ${step.subject}: Narwhal revision`).to.be.a("string");
      else expect(step.revisions.narwhal, `${step.kind} ${step.subject}`).to.equal(null);
    }
    // Steps that talk HTTP to engines list their requests, by alias, with their statuses.
    for (const kind of ["generation", "cache-capture", "attestation", "profile", "preflight"]) {
      const steps = index.gates.flatMap((g) => g.steps).filter((s) => s.current && s.kind === kind);
      expect(steps.length, kind).to.be.greaterThan(0);
      for (const s of steps) expect(s.commands.some((c) => c.http !== undefined && Object.keys(c.httpStatuses ?? {}).length > 0), `${kind} ${s.subject} HTTP commands`).to.equal(true);
    }
    // Gate C keeps the engine's answers its proof and capture were judged on.
    for (const s of index.gates.find((g) => g.gate === "C")!.steps.filter((x) => x.current && (x.kind === "generation" || x.kind === "cache-capture"))) {
      expect(s.artifacts.map((a) => a.name).some((n) => / GET \/metrics -> 200$/.test(n)), `${s.kind} ${s.subject} keeps /metrics`).to.equal(true);
    }
    const aliases = new Set(hosts.map((h) => h.alias));
    for (const gate of ["A", "B", "C", "D", "E", "F", "G"] as const) {
      const entry = index.gates.find((g) => g.gate === gate)!;
      expect(entry.status, `Gate ${gate}`).to.equal("pass");
      for (const step of entry.steps.filter((s) => s.current)) {
        // Only fleet-wide steps (the generated config, the edge matrix) may name no host.
        if (!step.subject.startsWith("fleet ")) expect(step.hosts.length, `${step.kind} ${step.subject}`).to.be.greaterThan(0);
        for (const h of step.hosts) expect(aliases.has(h) || h === "local", `${step.subject} names host ${h}`).to.equal(true);
        expect(step.sourceRevision).to.match(/^(?:[0-9a-f]{40}(?:-dirty)?|narwhal-fleet@\S+\+tree:[0-9a-f]{16})$/);
        for (const c of step.commands) expect(c.exitStatus === null || Number.isInteger(c.exitStatus), `${step.subject} exit status`).to.equal(true);
      }
    }
    // Every engine's live-process proof is in Gate C, on its own host.
    const proofs = index.gates.find((g) => g.gate === "C")!.steps.filter((s) => s.current && s.kind === "generation");
    expect(proofs.map((s) => [s.subject, s.hosts])).to.have.deep.members(engines.map((e) => [`engine ${e.id}`, [e.host]]));
    // The fabric commands name hosts by alias: iperf3's client and bind addresses became host:<alias>.
    const iperf = index.gates.find((g) => g.gate === "D")!.steps.flatMap((s) => s.commands).find((c) => c.argv?.includes("iperf3"));
    expect(iperf?.argv?.join(" ")).to.match(/-c host:sim\d -B host:sim\d/);
  });
});

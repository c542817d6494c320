import { expect } from "chai";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { LocalWorkspace, PulumiCommand } from "@pulumi/pulumi/automation";
import * as path from "node:path";
import * as fs from "node:fs";
import { runInHost } from "../../sim/hosts";
import { PROJECT_ROOT } from "./support/stack";
import { describeSteps, plannedChanges } from "./support/preview";
import type { CapacityPoint } from "../../lib/trial/capacity";

const run = promisify(execFile);
const tail = (text = "", lines = 40) => text.trimEnd().split("\n").slice(-lines).join("\n");

/** The README's first command, as a newcomer runs it: the dev stack on the simulated fleet, from nothing. */
describe("e2e: npm run demo", function () {
  this.timeout(1_800_000);

  async function devStack() {
    const cli = await PulumiCommand.get({ root: path.join(PROJECT_ROOT, ".tools"), skipVersionCheck: false });
    return LocalWorkspace.selectStack({ stackName: "dev", workDir: PROJECT_ROOT }, { pulumiCommand: cli });
  }

  it("goes from nothing to a serving router, sends one request through it, and exports the record", async () => {
    await (await devStack()).destroy({ onOutput: () => undefined });
    const { stdout } = await run("npm", ["run", "--silent", "demo"], { cwd: PROJECT_ROOT, env: process.env, maxBuffer: 64 * 1024 * 1024, timeout: 1_500_000 }).catch((err: Error & { stdout?: string; stderr?: string }) => {
      // The demo's own last words say which step stopped it; without them a failure reads as "exit 1".
      throw new Error(`npm run demo failed: ${err.message.split("\n")[0]}\n--- its stdout, last lines:\n${tail(err.stdout)}\n--- its stderr, last lines:\n${tail(err.stderr)}`);
    });

    // A healthy fleet's preflight passes as narwhal-check decides it: nothing skipped, the contract complete.
    const preflight = stdout.slice(stdout.indexOf("==> Preflight"), stdout.indexOf("==> One request through the router"));
    expect(preflight.trim().split("\n").slice(1)).to.deep.equal(["status: pass"]);
    const request = stdout.slice(stdout.indexOf("==> One request through the router"));
    const health = JSON.parse(/^health: (.*)$/m.exec(request)![1]) as { status: string; instances: number };
    expect(health).to.deep.include({ status: "ok", instances: 4 });
    expect(request).to.match(/^models: .*tiny-llama/m);
    expect(request).to.match(/^completion: ".+"$/m);
    expect(stdout).to.match(/deployment record sha256:[0-9a-f]{64}/);

    const stack = await devStack();
    const outputs = await stack.outputs();
    const routerUrl = outputs.routerUrl.value as string;
    expect(routerUrl).to.equal("http://198.18.0.11:8000");
    expect((outputs.preflight.value as { status: string }).status).to.equal("pass");
    expect((outputs.attestation.value as { contract: { undeclared: string[]; contract: Record<string, unknown> } }).contract).to.deep.include({ undeclared: [] });
    // Gate G's trial point ran through the tunnel, reconciled, and its record is Gate G's.
    const capacity = outputs.capacity.value as { points: Record<string, CapacityPoint> };
    expect(Object.keys(capacity.points)).to.deep.equal(["low"]);
    const low = capacity.points.low;
    expect(low.verdict, low.reasons.join("; ")).to.equal("pass");
    expect(low.errors).to.equal(0);
    expect(low.achievedRate).to.be.within(1, 4);
    expect(low.p50TtftMs).to.be.greaterThan(0);
    expect(stdout).to.match(/^low: pass, 2\/s offered/m);
    expect((outputs.evidence.value as Record<string, Array<{ kind: string }>>).G.map((e) => e.kind)).to.include("load-trial");

    // The runbook's repeat-work row: a new offered rate runs that point again, and nothing else.
    const config = path.join(PROJECT_ROOT, "Pulumi.dev.yaml");
    const original = fs.readFileSync(config, "utf8");
    try {
      expect(original.match(/^ {8}rate: 2$/gm), "the demo's one trial point").to.have.length(1);
      fs.writeFileSync(config, original.replace(/^ {8}rate: 2$/m, "        rate: 3"));
      const steps = await plannedChanges(stack);
      expect([...steps.keys()], describeSteps(steps)).to.deep.equal(["fleet-trial-low"]);
      expect(steps.get("fleet-trial-low")).to.deep.include({ op: "replace", keys: ["point"] });
      // A new profile runs every point again: the sweep replaces each profile, the store, and the point bound to it.
      fs.writeFileSync(config, original.replace(/^ {4}prefillRepeats: 3$/m, "    prefillRepeats: 4"));
      const resweep = await plannedChanges(stack);
      for (const e of ["e1", "e2", "e3", "e4"]) expect(resweep.get(`fleet-profiles-${e}`)?.op, describeSteps(resweep)).to.equal("replace");
      expect(resweep.get("fleet-trial-low")?.op, describeSteps(resweep)).to.equal("replace");
      expect([...resweep.keys()].filter((n) => /fabric|attestation-e|-generation$/.test(n)), "the fabric, attestations and generations stay").to.deep.equal([]);
    } finally {
      fs.writeFileSync(config, original);
    }

    // An ad-hoc point from the stack's state, which it leaves as it was.
    const adhoc = await run("npm", ["run", "--silent", "trial", "--", "--stack", "dev", "--rate", "1", "--requests", "4"], { cwd: PROJECT_ROOT, env: process.env, timeout: 300_000 });
    expect(adhoc.stdout).to.match(/^adhoc-\S+: pass\b/m);
    expect(adhoc.stdout).to.match(/^offered 1\/s, sent [0-9.]+\/s, 4 completed, 0 failed/m);

    // Leave the simulated hosts as the shared fleet found them.
    await stack.destroy({ onOutput: () => undefined });
    expect((await runInHost("sim1", ["ss", "-Hltn", "( sport = :8000 or sport = :8100 or sport = :8103 or sport = :9090 or sport = :9839 )"])).stdout.trim()).to.equal("");
  });
});

/**
 * The handoff check's shell around its Python (lib/router/handoff.ts): whatever the check does, the start
 * script ends up with one decision, and a handoff nobody judged never reaches narwhal-serve (narwhal would
 * hold a contract fleet out whole for a handoff it rejects). The Python's own judgements run against the
 * real narwhal-serve in test/providers/router-readmission.test.ts.
 */
import { expect } from "chai";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { handoffCheckLines, withResume } from "../../../lib/router/handoff";

function decide(python: string): { decision: unknown; files: string[] } {
  const run = fs.mkdtempSync(path.join(os.tmpdir(), "handoff-"));
  try {
    fs.mkdirSync(path.join(run, "runs"));
    fs.writeFileSync(path.join(run, "runs", "state.json"), "{}\n");
    fs.writeFileSync(path.join(run, "router.env"), "NARWHAL_ENGINE_API_KEY=x\n");
    const out = execFileSync("bash", ["-c", `set -eu\nrun=${JSON.stringify(run)}\n${handoffCheckLines(python, "")}printf '%s\\n' "$handoff"`], { encoding: "utf8" });
    return { decision: JSON.parse(out), files: fs.readdirSync(path.join(run, "runs")).sort() };
  } finally {
    fs.rmSync(run, { recursive: true, force: true });
  }
}

describe("router handoff: the start script's decision", () => {
  it("sets the handoff aside when the check cannot run, and says where its log is", () => {
    expect(decide("/nonexistent/venv/bin/python")).to.deep.equal({
      decision: { kept: false, reason: "the handoff check failed (see handoff.log in the router folder); set the handoff aside" },
      files: ["state.json.discarded"],
    });
  });

  it("sets it aside too when the check prints something other than a decision", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "handoff-python-"));
    try {
      fs.writeFileSync(path.join(dir, "python"), "#!/bin/sh\necho 'Traceback (most recent call last):'\nexit 0\n", { mode: 0o755 });
      expect(decide(path.join(dir, "python")).files).to.deep.equal(["state.json.discarded"]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("keeps the router's other recovery settings beside resume", () => {
    expect(withResume({ engine_restart_policy: "whole_wave" })).to.deep.equal({ engine_restart_policy: "whole_wave", resume: true });
    expect(withResume()).to.deep.equal({ resume: true });
  });
});

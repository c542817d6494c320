import { expect } from "chai";
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { CONTENT_SECURITY_POLICY } from "../../../lib/report/html/page";
import { esc } from "../../../lib/report/html/escape";
import { FIXTURE_STORE } from "../../fixtures/report/page";

const ROOT = path.resolve(__dirname, "..", "..", "..");
/** A generous bound for one report on a busy two-core machine. */
const COMMAND_TIMEOUT_MS = 60_000;

function report(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ["-r", "./tools/ts-require.js", "scripts/report.ts", ...args], { cwd: ROOT, timeout: COMMAND_TIMEOUT_MS }, (error, stdout, stderr) => {
      resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

describe("npm run report", function () {
  this.timeout(3 * COMMAND_TIMEOUT_MS);
  const stack = `report-command-${process.pid}`;
  const runs = path.join(ROOT, "runs", stack);
  let out: string;
  before(() => {
    fs.cpSync(FIXTURE_STORE, path.join(runs, "evidence"), { recursive: true });
    out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "report-command-")), "page.html");
  });
  after(() => {
    fs.rmSync(runs, { recursive: true, force: true });
    fs.rmSync(path.dirname(out), { recursive: true, force: true });
  });

  it("writes the page of a stack's evidence store offline, and says what it holds", async () => {
    const r = await report(["--stack", stack, "--offline", "--out", out]);
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout).to.equal(`${out}\n4 profile(s), 6 fabric edge(s), preflight, 4 engine(s), 0 trial point(s), 0 invalid record(s)\n`);
    const page = fs.readFileSync(out, "utf8");
    expect(page).to.include(`content="${esc(CONTENT_SECURITY_POLICY)}"`);
    expect(page).to.include(`Evidence report: stack ${stack}`);
  });

  it("refuses a stack without an evidence store, and bad arguments, before writing anything", async () => {
    const missing = await report(["--stack", `${stack}-none`, "--offline", "--out", `${out}.none`]);
    expect(missing.code).to.equal(1);
    expect(missing.stderr).to.include(`no evidence store at runs/${stack}-none/evidence`);
    const bad = await report(["--stack"]);
    expect(bad.code).to.equal(2);
    expect(bad.stderr).to.include("--stack needs a value");
    expect(fs.existsSync(`${out}.none`)).to.equal(false);
  });
});

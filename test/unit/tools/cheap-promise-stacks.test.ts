import { expect } from "chai";
import { spawnSync } from "node:child_process";
import * as path from "node:path";

const ROOT = path.resolve(__dirname, "../../..");
const SDK = path.dirname(require.resolve("@pulumi/pulumi/package.json"));

/**
 * In a fresh process that loaded the hook as program.js does: one promise stamped through the SDK's own
 * module, as its callers reach it, and left pending; what the stamp holds, the limit after it, and the
 * SDK's leak check.
 */
function stampOnce(env: NodeJS.ProcessEnv): { stamp: string; limitAfter: number; leaked: number; otherStackFrames: number } {
  const script = `
    require(${JSON.stringify(path.join(ROOT, "tools/cheap-promise-stacks.js"))});
    const debuggable = require(${JSON.stringify(path.join(SDK, "runtime", "debuggable.js"))});
    const pending = new Promise(() => {});
    (function callerOfTheSdk() { debuggable.debuggablePromise(pending, "a test's promise"); })();
    const [leaks] = debuggable.leakedPromises();
    const other = new Error("a real error").stack.split("\\n").filter((l) => l.trim().startsWith("at ")).length;
    console.log(JSON.stringify({ stamp: pending._debugStackTrace, limitAfter: Error.stackTraceLimit, leaked: leaks.size, otherStackFrames: other }));
  `;
  const r = spawnSync(process.execPath, ["-e", script], { cwd: ROOT, encoding: "utf8", timeout: 30_000, env: { PATH: process.env.PATH, ...env } });
  expect(r.status, r.stderr).to.equal(0);
  return JSON.parse(r.stdout.trim());
}

describe("tools/cheap-promise-stacks.js: the SDK's promise stamps", () => {
  it("takes no frames for a stamp, still tracks the promise for the leak check, and leaves other stacks whole", () => {
    const r = stampOnce({});
    expect(r).to.deep.equal({ stamp: "Error", limitAfter: 10, leaked: 1, otherStackFrames: r.otherStackFrames });
    expect(r.otherStackFrames).to.be.greaterThan(0);
  });

  it("keeps every frame while leaks are being debugged (PULUMI_DEBUG_PROMISE_LEAKS)", () => {
    const r = stampOnce({ PULUMI_DEBUG_PROMISE_LEAKS: "1" });
    expect(r.stamp).to.match(/^Error\n/).and.contain("callerOfTheSdk");
    expect(r.leaked).to.equal(1);
  });
});

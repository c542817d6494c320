import { expect } from "chai";
import { spawnSync } from "node:child_process";
import * as path from "node:path";

// A child process stands in for the program under the SDK's runner: the runner's handler is registered
// first, as it is there, and prints what it would print.
function runProgram(rejection: string): { status: number | null; stderr: string } {
  const script = `
    process.on("unhandledRejection", (err) => { console.error("runner printed: " + err.message); process.exitCode = 2; });
    require(${JSON.stringify(path.resolve(__dirname, "../../../tools/engine-gone.js"))});
    Promise.reject(${rejection});
    setTimeout(() => {}, 200);
  `;
  const r = spawnSync(process.execPath, ["-e", script], { encoding: "utf8", timeout: 10_000 });
  return { status: r.status, stderr: r.stderr };
}

describe("the program when the engine has gone", () => {
  it("ends failing and prints no gRPC trace when a monitor call fails with UNAVAILABLE", () => {
    const r = runProgram(`Object.assign(new Error("14 UNAVAILABLE: resource monitor shut down"), { code: 14, details: "shut down", metadata: {} })`);
    expect(r).to.deep.equal({ status: 1, stderr: "" });
  });

  it("leaves every other unhandled rejection to the runner", () => {
    const r = runProgram(`Object.assign(new Error("EROFS: read-only file system"), { code: "EROFS" })`);
    expect(r.stderr).to.equal("runner printed: EROFS: read-only file system\n");
    expect(r.status).to.equal(2);
  });
});

import { expect } from "chai";
import { spawnSync } from "node:child_process";
import * as path from "node:path";

// A child process stands in for the program under the SDK's runner: the runner's handler is registered
// first, as it is there, and decides as it does, with the SDK's own RunError check.
function runProgram(rejection: string): string {
  const script = `
    const { RunError } = require("@pulumi/pulumi/errors");
    process.on("unhandledRejection", (err) => console.error(RunError.isInstance(err) ? "message: " + err.message : "inspected: " + err.name));
    require(${JSON.stringify(path.resolve(__dirname, "../../../tools/domain-errors.js"))});
    Promise.reject(${rejection});
    setTimeout(() => {}, 200);
  `;
  const r = spawnSync(process.execPath, ["-e", script], { encoding: "utf8", timeout: 20_000, cwd: path.resolve(__dirname, "../../..") });
  return r.stderr;
}

describe("the program's own refusals under the SDK's runner", () => {
  it("end as a RunError: the message alone, without the prefixes of the resource inputs it travelled through", () => {
    const err = `Object.assign(new Error('error serializing property "steps": error serializing property "fleetDocument": engine_contract: the engines differ\\n  - engine_version: "0.29.0" (e1) vs "0.29.1" (e2)'), { code: "NARWHAL_CONTRACT_MISMATCH" })`;
    expect(runProgram(err)).to.equal('message: engine_contract: the engines differ\n  - engine_version: "0.29.0" (e1) vs "0.29.1" (e2)\n');
  });

  it("leaves any other error to the runner's full report", () => {
    expect(runProgram(`new TypeError("x is undefined")`)).to.equal("inspected: TypeError\n");
    expect(runProgram(`Object.assign(new Error("EROFS"), { code: "EROFS" })`)).to.equal("inspected: Error\n");
  });
});

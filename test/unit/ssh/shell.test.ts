import { expect } from "chai";
import { execFileSync } from "node:child_process";
import { envFile, shellLine, shq } from "../../../lib/shell";

describe("shell quoting", () => {
  it("round-trips hostile words through a real shell", () => {
    const words = ["plain", "with space", "it's", "$(touch /tmp/x)", "`id`", '"q"', "a\nb", ""];
    const out = execFileSync("sh", ["-c", `printf '%s\\0' ${shellLine(words)}`], { encoding: "utf8" });
    expect(out.split("\0").slice(0, -1)).to.deep.equal(words);
  });
  it("writes env files a shell reads back exactly", () => {
    const env = { A: "x y", B: "it's $HOME" };
    const out = execFileSync("sh", ["-c", `set -a; eval "$1"; printf '%s|%s' "$A" "$B"`, "sh", envFile(env)], { encoding: "utf8" });
    expect(out).to.equal("x y|it's $HOME");
  });
  it("refuses a variable name a shell would misread", () => {
    expect(() => envFile({ "A-B": "1" })).to.throw("not an environment variable name: A-B");
  });
  it("quotes numbers too", () => expect(shq(5)).to.equal("'5'"));
});

import { expect } from "chai";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { REVISION_PATTERN } from "../../../lib/evidence/record";
import { sourceRevision, treeRevision } from "../../../lib/evidence/revision";

describe("evidence: source revision outside a git checkout", () => {
  let dir = "";
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "revision-"));
    fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name: "narwhal-fleet", version: "0.4.2" }));
    fs.mkdirSync(path.join(dir, "lib"));
    fs.writeFileSync(path.join(dir, "lib", "a.ts"), "export const a = 1;\n");
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("is the package version and a digest of the program's source files, never forty zeros", () => {
    const rev = sourceRevision(dir);
    expect(rev).to.match(/^narwhal-fleet@0\.4\.2\+tree:[0-9a-f]{16}$/);
    expect(rev).not.to.include("0".repeat(40));
    expect(rev).to.match(REVISION_PATTERN);
  });

  it("changes with one byte of the source, and not with what the program writes or installs", () => {
    const before = treeRevision(dir);
    fs.mkdirSync(path.join(dir, "runs"));
    fs.writeFileSync(path.join(dir, "runs", "x.json"), "{}");
    fs.mkdirSync(path.join(dir, "lib", "node_modules"));
    fs.writeFileSync(path.join(dir, "lib", "node_modules", "y.js"), "1");
    expect(treeRevision(dir)).to.equal(before);
    fs.writeFileSync(path.join(dir, "lib", "a.ts"), "export const a = 2;\n");
    expect(treeRevision(dir)).not.to.equal(before);
  });
});

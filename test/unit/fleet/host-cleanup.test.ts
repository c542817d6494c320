import { expect } from "chai";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { CLAIM_FILE, claimScript, cleanupScript, stackFolder } from "../../../lib/fleet/host-cleanup";

// The scripts run here under sh exactly as they run on a host, against a folder of this test's own.
const sh = (script: string) => execFileSync("sh", ["-c", script], { encoding: "utf8" }).trim();

describe("host cleanup on destroy", () => {
  let stateDir: string;
  beforeEach(() => (stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "narwhal-cleanup-"))));
  afterEach(() => fs.rmSync(stateDir, { recursive: true, force: true }));

  it("removes the stack's folder while this discovery holds the claim", () => {
    const folder = stackFolder(stateDir, "st");
    sh(claimScript(folder, "t1"));
    fs.mkdirSync(path.join(folder, "engines", "e1"), { recursive: true });
    fs.writeFileSync(path.join(folder, "engines", "e1", "engine.log"), "x");
    expect(sh(cleanupScript(folder, "t1", false))).to.equal("removed");
    expect(fs.readdirSync(stateDir)).to.deep.equal([]);
  });

  it("leaves the folder to a newer discovery that claimed it (a replacement, not a destroy)", () => {
    const folder = stackFolder(stateDir, "st");
    sh(claimScript(folder, "old"));
    sh(claimScript(folder, "new"));
    expect(sh(cleanupScript(folder, "old", false))).to.equal("superseded");
    expect(fs.readFileSync(path.join(folder, CLAIM_FILE), "utf8")).to.equal("new");
  });

  it("keeps the folder with retainOnDestroy, dropping only the claim", () => {
    const folder = stackFolder(stateDir, "st");
    sh(claimScript(folder, "t1"));
    fs.writeFileSync(path.join(folder, "kept"), "x");
    expect(sh(cleanupScript(folder, "t1", true))).to.equal("retained");
    expect(fs.readdirSync(folder)).to.deep.equal(["kept"]);
  });

  it("says absent when the folder is already gone, and refuses names that leave the stack's folder", () => {
    expect(sh(cleanupScript(stackFolder(stateDir, "gone"), "t1", false))).to.equal("absent");
    for (const stack of ["..", ".", "a/b", ""]) expect(() => stackFolder(stateDir, stack)).to.throw(/refusing to clean/);
    expect(() => stackFolder("relative", "st")).to.throw(/refusing to clean/);
  });
});

import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { expect } from "chai";
import { missingPaths, presenceScript } from "../../lib/host-paths";

describe("host paths: the look for what a resource made on its host", () => {
  it("names each missing path, in order, whatever its characters, and an executable that is only a file", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "host-paths-"));
    try {
      const there = path.join(dir, "it's here.yml");
      const tool = path.join(dir, "bin", "narwhal-serve");
      fs.writeFileSync(there, "x");
      fs.mkdirSync(path.dirname(tool));
      fs.writeFileSync(tool, "#!/bin/sh\n", { mode: 0o644 });
      const gone = path.join(dir, "a $(dollar) and `tick`.json");
      const r = spawnSync("sh", ["-s"], { input: presenceScript([{ path: there }, { path: gone }, { path: tool, executable: true }]), encoding: "utf8" });
      expect(r.status, r.stderr).to.equal(0);
      expect(missingPaths(r.stdout)).to.deep.equal([gone, tool]);
      fs.chmodSync(tool, 0o755);
      const again = spawnSync("sh", ["-s"], { input: presenceScript([{ path: there }, { path: tool, executable: true }]), encoding: "utf8" });
      expect(again.stdout).to.equal("");
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

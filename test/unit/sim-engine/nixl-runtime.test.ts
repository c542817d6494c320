import { expect } from "chai";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { findNixlDistribution, hasRkeyUnpackFix, NIXL_SEARCH_PATH, releaseOf } from "../../../sim/engine/nixl-runtime";
import { removeTemps, tempDir } from "./helpers";

function distInfo(dir: string, entry: string, name: string, version: string): void {
  mkdirSync(join(dir, entry), { recursive: true });
  writeFileSync(join(dir, entry, "METADATA"), `Metadata-Version: 2.1\nName: ${name}\nVersion: ${version}\n`);
}

describe("sim-engine NIXL runtime: the declared version and #49238's fix", () => {
  after(removeTemps);

  it("finds the nixl distribution the simulated image declares (sim/python on a host)", () => {
    const found = findNixlDistribution();
    expect(found).to.include({ name: "nixl", version: "0.7.1" });
    expect(found!.source).to.equal(join(NIXL_SEARCH_PATH[0], "nixl-0.7.1.dist-info", "METADATA"));
  });

  it("reads the first folder that has one, takes the CUDA-suffixed names, and ignores other distributions", () => {
    const a = tempDir("site-a-");
    const b = tempDir("site-b-");
    distInfo(a, "ucx_py-0.45.0.dist-info", "ucx-py", "0.45.0");
    distInfo(b, "nixl_cu12-1.5.0.dist-info", "nixl-cu12", "1.5.0");
    expect(findNixlDistribution([join(a, "missing"), a, b])).to.include({ name: "nixl-cu12", version: "1.5.0" });
    expect(findNixlDistribution([a])).to.equal(null);
  });

  it("has the fix from 1.5.0 on (inferred) and not up to 1.4.1 (verified), nor in the image's 0.7.1", () => {
    for (const v of ["0.7.1", "1.3.1", "1.3.2", "1.4.0", "1.4.1", "1.4.1.post1", "1.4.9"]) expect(hasRkeyUnpackFix(v), v).to.equal(false);
    for (const v of ["1.5.0", "1.5.0rc1", "1.5", "1.6.2", "2.0.0"]) expect(hasRkeyUnpackFix(v), v).to.equal(true);
  });

  it("refuses a version with no release segment instead of guessing", () => {
    expect(releaseOf("1.4.1.post2")).to.deep.equal([1, 4, 1]);
    expect(() => hasRkeyUnpackFix("main")).to.throw("NIXL version 'main' has no release segment (expected e.g. 0.7.1)");
  });
});

/** docs/architecture.md stays true: every file it names exists and still holds what the page says of it. */
import { expect } from "chai";
import * as fs from "node:fs";
import * as path from "node:path";

const ROOT = path.join(__dirname, "..", "..");
const page = fs.readFileSync(path.join(ROOT, "docs", "architecture.md"), "utf8");

/** Each file of the GPU ids' path and what it must still mention. */
const GPU_ID_PATH: Record<string, string> = {
  "lib/config/schema/engines.ts": "gpuIds",
  "lib/config/rules/engines.ts": "gpuIds",
  "lib/config/rules/launch.ts": "gpuIds",
  "entry/stack-config.ts": "parseFleetConfig",
  "components/fleet.ts": "gpuIds",
  "components/discovery.ts": "resolveEngineLaunch",
  "lib/launch/policy.ts": "resolveGpuIds",
  "lib/launch/plan.ts": "resolveGpuIds",
  "components/engine.ts": "renderLaunchPlan",
  "lib/runtime/gpu-claims.ts": "gpuIds",
  "lib/runtime/container-spec.ts": "gpuIds",
  "components/profiles.ts": "gpuIds",
  "lib/profiling/lanes.ts": "gpuIds",
  "lib/fleet/generated-config.ts": "GPU_IDS",
};

describe("docs/architecture.md", () => {
  it("names only files that exist", () => {
    const named = [...page.matchAll(/`((?:lib|components|entry|dynamic-providers|sim|test|docs)\/[\w./-]+\.(?:ts|md))`/g)].map((m) => m[1]);
    expect(named.length).to.be.greaterThan(10);
    for (const file of named) expect(fs.existsSync(path.join(ROOT, file)), file).to.equal(true);
  });

  it("follows the GPU ids through files that still hold them", () => {
    for (const [file, holds] of Object.entries(GPU_ID_PATH)) {
      expect(page, `the page names ${file}`).to.contain(`\`${file}\``);
      expect(fs.readFileSync(path.join(ROOT, file), "utf8"), `${file} mentions ${holds}`).to.contain(holds);
    }
  });
});

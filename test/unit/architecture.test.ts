/** docs/architecture.md stays true: every file it names exists and still holds what the page says of it. */
import { expect } from "chai";
import * as fs from "node:fs";
import * as path from "node:path";

const ROOT = path.join(__dirname, "..", "..");
const page = fs.readFileSync(path.join(ROOT, "docs", "architecture.md"), "utf8");

/** The GPU ids' path from config to stack output, in order, and what each file must still mention. */
const GPU_ID_PATH: Record<string, string> = {
  "lib/config/schema/engines.ts": "gpuIds",
  "lib/config/rules/engines.ts": "tensorParallelFits",
  "lib/launch/policy.ts": "resolveGpuIds",
  "lib/launch/plan.ts": "placement",
  "components/fleet.ts": "plan.placement.gpuIds",
};

/** Files that read the resolved ids, each from the plan (what it must mention), none from the config. */
const RESOLVED_READERS: Record<string, string> = {
  "components/discovery.ts": "engineLaunchPlan",
  "lib/adoption/preview-reads.ts": "engineLaunchPlan",
  "lib/runtime/gpu-claims.ts": "placement.gpuIds",
  "lib/runtime/container-spec.ts": "placement.gpuIds",
  "components/profiles.ts": "plan.placement",
  "lib/profiling/lanes.ts": "gpuIds",
  "lib/fleet/generated-config.ts": "placement.gpuIds",
};

/** A read of the field from an engine's config (`EngineSpec` or the raw config the rules see). */
const CONFIG_READ = /\b(?:e|engine|spec|engine\.value)\.gpuIds\b/;

const read = (file: string) => fs.readFileSync(path.join(ROOT, file), "utf8");

function productionFiles(dir: string): string[] {
  return fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((d) => {
    const rel = `${dir}/${d.name}`;
    if (d.isDirectory()) return productionFiles(rel);
    return d.name.endsWith(".ts") ? [rel] : [];
  });
}

describe("docs/architecture.md", () => {
  it("names only files that exist", () => {
    const named = [...page.matchAll(/`((?:lib|components|entry|dynamic-providers|sim|test|docs)\/[\w./-]+\.(?:ts|md))`/g)].map((m) => m[1]);
    expect(named.length).to.be.greaterThan(10);
    for (const file of named) expect(fs.existsSync(path.join(ROOT, file)), file).to.equal(true);
  });

  it("follows the GPU ids from config to stack output through at most five files that still hold them", () => {
    const section = page.slice(page.indexOf("## One value"));
    const steps = [...section.matchAll(/^\d+\. `([^`]+)`/gm)].map((m) => m[1]);
    expect(steps).to.deep.equal(Object.keys(GPU_ID_PATH));
    expect(steps.length).to.be.at.most(5);
    for (const [file, holds] of Object.entries(GPU_ID_PATH)) expect(read(file), `${file} mentions ${holds}`).to.contain(holds);
  });

  it("has every reader after the launch policy take the resolved ids from the plan, never from the config", () => {
    for (const [file, holds] of Object.entries(RESOLVED_READERS)) {
      expect(page, `the page names ${file}`).to.contain(`\`${file}\``);
      expect(read(file), `${file} mentions ${holds}`).to.contain(holds);
      expect(read(file), `${file} reads gpuIds from the config`).to.not.match(CONFIG_READ);
    }
  });

  it("names every production file that reads an engine's gpuIds", () => {
    const files = ["index.ts", ...["entry", "components", "dynamic-providers", "lib"].flatMap(productionFiles)];
    // A property read in code (`x.gpuIds`, `f().gpuIds`), not a config path in a message (`engines[].gpuIds`).
    const readers = files.filter((f) => /[\w)]\.gpuIds\b/.test(read(f)));
    expect(readers.length).to.be.greaterThan(5);
    for (const file of readers) expect(page, `the page names ${file}, which reads gpuIds`).to.contain(`\`${file}\``);
  });
});

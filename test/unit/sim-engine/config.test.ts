import { expect } from "chai";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { coefficientsFor, DEFAULT_COEFFICIENTS, loadSimConfig, SimConfigError } from "../../../sim/engine/config";
import { removeTemps, tempDir } from "./helpers";

function withFile(value: unknown): NodeJS.ProcessEnv {
  const file = join(tempDir(), "sim.json");
  writeFileSync(file, typeof value === "string" ? value : JSON.stringify(value));
  return { NARWHAL_SIM_CONFIG: file };
}

describe("sim-engine config (NARWHAL_SIM_CONFIG)", () => {
  after(removeTemps);

  it("fills every default when unset", () => {
    const c = loadSimConfig({});
    expect(c).to.deep.equal({
      timeScale: 0.05,
      gpu: { product: "NVIDIA H100 80GB HBM3", memoryGiB: 80, vendor: "nvidia", count: 8 },
      latency: { default: {}, byPort: {} },
      version: "0.29.0",
      startupDelayS: 1.0,
      tokenizeRoute: true,
      nixl: { endpointTimeoutS: 180 },
    });
    expect(coefficientsFor(c, 8000)).to.deep.equal(DEFAULT_COEFFICIENTS);
  });

  it("merges byPort over default over the built-in coefficients", () => {
    const c = loadSimConfig(withFile({ latency: { default: { decodeBase: 0.02 }, byPort: { "8101": { prefillC: 0.5 } } } }));
    expect(coefficientsFor(c, 8101)).to.deep.equal({ ...DEFAULT_COEFFICIENTS, decodeBase: 0.02, prefillC: 0.5 });
    expect(coefficientsFor(c, 8102)).to.deep.equal({ ...DEFAULT_COEFFICIENTS, decodeBase: 0.02 });
  });

  it("lets NARWHAL_SIM_TIME_SCALE override timeScale", () => {
    expect(loadSimConfig({ ...withFile({ timeScale: 0.5 }), NARWHAL_SIM_TIME_SCALE: "0.01" }).timeScale).to.equal(0.01);
    expect(() => loadSimConfig({ NARWHAL_SIM_TIME_SCALE: "fast" })).to.throw(SimConfigError, "NARWHAL_SIM_TIME_SCALE=fast: expected a positive number");
  });

  it("names the offending key", () => {
    expect(() => loadSimConfig(withFile({ gpu: { vendor: "intel" } }))).to.throw(SimConfigError, /gpu\.vendor/);
    expect(() => loadSimConfig(withFile({ timescale: 1 }))).to.throw(SimConfigError, /timescale/);
    expect(() => loadSimConfig(withFile("{"))).to.throw(SimConfigError, /not JSON/);
    expect(() => loadSimConfig(withFile({ nixl: { endpointTimeoutS: -1 } }))).to.throw(SimConfigError, /nixl\.endpointTimeoutS/);
  });
});

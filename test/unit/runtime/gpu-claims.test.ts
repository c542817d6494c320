import { expect } from "chai";
import { renderLaunchPlan } from "../../../lib/launch/plan";
import { gpuClaimScript } from "../../../lib/runtime/gpu-claims";
import { launchInputs } from "../launch/inputs";

describe("gpu claims", () => {
  it("claims the GPUs the plan's placement names, whatever the environment text says", () => {
    const plan = renderLaunchPlan(launchInputs());
    const moved = { ...plan, env: { ...plan.env, CUDA_VISIBLE_DEVICES: "7" }, placement: { ...plan.placement, gpuIds: [1] } };
    expect(gpuClaimScript(plan, 30)).to.match(/^gpus=' 0 1 '\n/);
    expect(gpuClaimScript(moved, 30)).to.match(/^gpus=' 1 '\n/);
  });

  it("claims nothing for a plan without GPUs", () => {
    const plan = renderLaunchPlan(launchInputs());
    expect(gpuClaimScript({ ...plan, placement: { ...plan.placement, gpuIds: [] } }, 30)).to.equal("release_gpu_claim() { :; }\n");
  });
});

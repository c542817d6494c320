import { expect } from "chai";
import { twoHostFleet } from "./inputs";
import { checkReplicaShapes, engineLaunchPlan, HostLaunchFacts, LaunchPolicyError, resolveEngineLaunch } from "../../../lib/launch/policy";

const h100 = (alias: string, n = 2): HostLaunchFacts => ({
  alias,
  fabricInterface: "fab0",
  fabricAddress: alias === "a" ? "198.18.0.11" : "198.18.0.12",
  vendor: "nvidia",
  product: "NVIDIA H100 80GB HBM3",
  gpus: Array.from({ length: n }, (_, index) => ({ index })),
  model: { dtype: "bfloat16", maxPositionEmbeddings: 32768 },
});

const spec = twoHostFleet;

function rejection(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    if (err instanceof LaunchPolicyError) return err.issues.map((i) => `${i.path}: ${i.message}`);
    throw err;
  }
  throw new Error("expected a LaunchPolicyError");
}

describe("launch policy", () => {
  it("gives one engine on a host every GPU with TP equal to the count", () => {
    const s = spec([{ id: "e1", host: "a" }, { id: "e2", host: "b" }]);
    const l = resolveEngineLaunch(s, s.engines[0], h100("a"));
    expect(l.engine).to.deep.include({ gpuIds: [0, 1], gpuIdsNamed: false });
    expect(l.policy.tensorParallelSize).to.equal(2);
    expect(l.policy).to.include({ blockSize: 128, maxModelLen: 16384, maxNumSeqs: 8, gpuMemoryUtilization: 0.9, dtype: "model", transport: "tcp" });
  });

  it("lets engine overrides win over the fleet policy", () => {
    const s = spec([{ id: "e1", host: "a", overrides: { blockSize: 16, maxNumSeqs: 4, dtype: "float16" } }, { id: "e2", host: "b" }], {
      launch: { maxModelLen: 8192 },
    });
    const l = resolveEngineLaunch(s, s.engines[0], h100("a"));
    expect(l.policy).to.include({ blockSize: 16, maxNumSeqs: 4, dtype: "float16", maxModelLen: 8192 });
  });

  it("accepts disjoint GPUs on one host", () => {
    const s = spec([{ id: "e1", host: "a", gpuIds: [0] }, { id: "e2", host: "a", gpuIds: [1] }]);
    expect(resolveEngineLaunch(s, s.engines[1], h100("a")).engine).to.deep.include({ gpuIds: [1], gpuIdsNamed: true });
  });

  it("refuses GPU indices discovery read twice or not as numbers, which would reach device flags and claims", () => {
    const s = spec([{ id: "e1", host: "a" }, { id: "e2", host: "b" }]);
    const twice: HostLaunchFacts = { ...h100("a"), gpus: [{ index: 0 }, { index: 0 }] };
    expect(rejection(() => resolveEngineLaunch(s, s.engines[0], twice))).to.deep.equal([
      "engines[0].host: engine e1 on host a: GPU ids [0,0] must be distinct non-negative integers; discovery read the host's GPU indices as [0,0]",
    ]);
    const garbled: HostLaunchFacts = { ...h100("a"), gpus: [{ index: 0 }, { index: Number("n/a") }] };
    expect(rejection(() => resolveEngineLaunch(s, s.engines[0], garbled))).to.deep.equal([
      "engines[0].host: engine e1 on host a: GPU ids [0,null] must be distinct non-negative integers; discovery read the host's GPU indices as [0,null]",
    ]);
  });

  it("resolves and renders an engine's plan in one call from what discovery measured, the plan Gate A and the preview forecast both use", () => {
    const s = spec([{ id: "e1", host: "a" }, { id: "e2", host: "b", gpuIds: [1], overrides: { tensorParallelSize: 1 } }]);
    const discovered = { fabricAddress: "198.18.0.12", accelerators: { vendor: "nvidia" as const, product: "NVIDIA H100 80GB HBM3", gpus: [{ index: 0 }, { index: 1 }] }, model: { dtype: "bfloat16" } };
    const plan = engineLaunchPlan(s, s.engines[1], discovered);
    expect(plan).to.include({ engineId: "e2", url: "http://198.18.0.12:8101", tensorParallelSize: 1, dsRequired: false });
    expect(plan.placement).to.deep.include({ gpuIds: [1], gpuIdsNamed: true, visibilityVariable: "CUDA_VISIBLE_DEVICES" });
    expect(plan.env.CUDA_VISIBLE_DEVICES).to.equal("1");
    expect(rejection(() => engineLaunchPlan(s, s.engines[0], { ...discovered, accelerators: { vendor: "none", product: null, gpus: [], notice: "no GPU" } }))).to.deep.equal([
      "engines[0].host: engine e1 on host a: no GPU",
    ]);
  });

  it("rejects a GPU the host does not have, and a host with none", () => {
    const s = spec([{ id: "e1", host: "a", gpuIds: [3] }, { id: "e2", host: "b" }]);
    expect(rejection(() => resolveEngineLaunch(s, s.engines[0], h100("a")))).to.deep.equal([
      "engines[0].gpuIds: engine e1 on host a: GPU 3 is not visible (visible GPUs: 0, 1)",
    ]);
    const none: HostLaunchFacts = { ...h100("b"), vendor: "none", product: null, gpus: [], notice: "Inspect GPU PCI device exposure on this engine host." };
    expect(rejection(() => resolveEngineLaunch(s, s.engines[1], none))).to.deep.equal([
      "engines[1].host: engine e2 on host b: Inspect GPU PCI device exposure on this engine host.",
    ]);
  });

  it("gives a ROCm engine the render nodes discovery read for its GPUs, and refuses a GPU sysfs showed none for", () => {
    const s = spec([{ id: "e1", host: "a", gpuIds: [1] }, { id: "e2", host: "b" }]);
    const mi300x = (alias: string, gpus: HostLaunchFacts["gpus"]): HostLaunchFacts => ({ ...h100(alias), vendor: "amd", product: "AMD Instinct MI300X", gpus });
    const read = mi300x("a", [{ index: 0, renderNode: "/dev/dri/renderD129" }, { index: 1, renderNode: "/dev/dri/renderD128" }]);
    expect(resolveEngineLaunch(s, s.engines[0], read).host.renderNodes).to.deep.equal(["/dev/dri/renderD128"]);
    expect(resolveEngineLaunch(s, s.engines[1], read).host.renderNodes).to.deep.equal(["/dev/dri/renderD129", "/dev/dri/renderD128"]);
    expect(rejection(() => resolveEngineLaunch(s, s.engines[1], mi300x("b", [{ index: 0, renderNode: "/dev/dri/renderD128" }, { index: 1 }])))).to.deep.equal([
      "engines[1].host: engine e2 on host b: GPU 1 has no render node: discovery found none under /sys/class/drm for its PCI function; restore the device exposure and run discovery again (pulumi up --refresh)",
    ]);
    // NVIDIA engines carry none.
    expect(resolveEngineLaunch(s, s.engines[0], h100("a")).host).to.not.have.property("renderNodes");
  });

  it("appends model requirements and refuses a conflicting layout override", () => {
    const s = spec([{ id: "e1", host: "a", overrides: { engineArgs: ["--max-num-seqs", "2"] } }, { id: "e2", host: "b" }]);
    const facts = { ...h100("a"), model: { dtype: "bfloat16", trustRemoteCode: true, ssmConvStateLayoutDS: true } };
    const l = resolveEngineLaunch(s, s.engines[0], facts);
    expect(l.model).to.include({ trustRemoteCode: true, ssmConvStateLayoutDS: true });
    expect(l.policy.engineArgs).to.deep.equal(["--max-num-seqs", "2"]);

    const conflicting = spec([{ id: "e1", host: "a", overrides: { engineEnv: { VLLM_SSM_CONV_STATE_LAYOUT: "SD" } } }, { id: "e2", host: "b" }]);
    expect(rejection(() => resolveEngineLaunch(conflicting, conflicting.engines[0], facts))).to.deep.equal([
      "engines[0].overrides.engineEnv: engine e1 on host a: VLLM_SSM_CONV_STATE_LAYOUT=SD conflicts with the checkpoint's convolutional SSM state, which requires DS",
    ]);
  });

  it("requires one accelerator product and one TP shape across replicas", () => {
    const s = spec([{ id: "e1", host: "a" }, { id: "e2", host: "b" }]);
    const a = resolveEngineLaunch(s, s.engines[0], h100("a"));
    const b = resolveEngineLaunch(s, s.engines[1], { ...h100("b", 1), product: "AMD Instinct MI300X", vendor: "amd", gpus: [{ index: 0, renderNode: "/dev/dri/renderD128" }] });
    expect(checkReplicaShapes([
      { engineIndex: 0, id: "e1", host: "a", product: "NVIDIA H100 80GB HBM3", tensorParallelSize: a.policy.tensorParallelSize },
      { engineIndex: 1, id: "e2", host: "b", product: "AMD Instinct MI300X", tensorParallelSize: b.policy.tensorParallelSize },
    ]).map((i) => `${i.path}: ${i.message}`)).to.deep.equal([
      "engines[1].host: engine e2 on host b has AMD Instinct MI300X, but engine e1 on host a has NVIDIA H100 80GB HBM3; all replicas must share one accelerator product",
      "engines[1].overrides.tensorParallelSize: engine e2 on host b runs TP 1, but engine e1 runs TP 2; all replicas must share one TP shape",
    ]);
  });
});

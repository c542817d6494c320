import { expect } from "chai";
import { launchRecord, LaunchInputs, renderLaunchPlan } from "../../../lib/launch/plan";
import { launchInputs } from "./inputs";

const base: LaunchInputs = launchInputs();

function flag(argv: ReadonlyArray<string>, name: string): string | undefined {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
}

describe("launch plan", () => {
  it("renders the runbook defaults for an NVIDIA engine on TCP", () => {
    const plan = renderLaunchPlan(base);
    expect(plan.argv.slice(0, 3)).to.deep.equal(["vllm", "serve", "/models/tiny"]);
    expect(flag(plan.argv, "--tensor-parallel-size")).to.equal("2");
    expect(flag(plan.argv, "--dtype")).to.equal("bfloat16");
    expect(flag(plan.argv, "--max-model-len")).to.equal("8192"); // capped by the model
    expect(flag(plan.argv, "--block-size")).to.equal("128");
    expect(plan.argv).to.include("--enforce-eager").and.include("--no-enable-prefix-caching");
    expect(JSON.parse(flag(plan.argv, "--kv-transfer-config")!)).to.deep.equal({
      kv_connector: "NixlConnector",
      kv_role: "kv_both",
      kv_load_failure_policy: "fail",
      kv_connector_extra_config: { backends: ["UCX"], enforce_handshake_compat: true, kv_lease_duration: 30 },
    });
    expect(plan.env).to.deep.equal({
      VLLM_NIXL_SIDE_CHANNEL_HOST: "198.18.0.11",
      VLLM_NIXL_SIDE_CHANNEL_PORT: "5600",
      UCX_TLS: "tcp,sm,self,cuda_copy",
      UCX_NET_DEVICES: "fab0",
      UCX_TCP_PORT_RANGE: "6300-6500",
      CUDA_VISIBLE_DEVICES: "0,1",
    });
    expect(plan.url).to.equal("http://198.18.0.11:8100");
    expect(plan.planSha256).to.match(/^sha256:[0-9a-f]{64}$/);
    expect(plan.placement).to.deep.equal({ gpuIds: [0, 1], gpuIdsNamed: true, vendor: "nvidia", visibilityVariable: "CUDA_VISIBLE_DEVICES", transport: "tcp", rdmaDevices: [], renderNodes: [] });
  });

  it("uses HIP_VISIBLE_DEVICES alone on ROCm, and RDMA devices for ucx_rdma", () => {
    const plan = renderLaunchPlan({
      ...base,
      host: { ...base.host, vendor: "amd", renderNodes: ["/dev/dri/renderD129", "/dev/dri/renderD128"] },
      policy: { ...base.policy, transport: "ucx_rdma", rdmaHcas: ["mlx5_0:1", "mlx5_1:1"] },
    });
    expect(plan.env.HIP_VISIBLE_DEVICES).to.equal("0,1");
    expect(plan.env).to.not.have.property("CUDA_VISIBLE_DEVICES");
    expect(plan.env.UCX_TLS).to.equal("rc,sm,self,rocm");
    expect(plan.env.UCX_NET_DEVICES).to.equal("mlx5_0:1,mlx5_1:1");
    expect(plan.placement).to.deep.equal({
      gpuIds: [0, 1],
      gpuIdsNamed: true,
      vendor: "amd",
      visibilityVariable: "HIP_VISIBLE_DEVICES",
      transport: "ucx_rdma",
      rdmaDevices: [],
      renderNodes: ["/dev/dri/renderD129", "/dev/dri/renderD128"],
    });
    const withDevices = renderLaunchPlan({ ...base, policy: { ...base.policy, transport: "ucx_rdma", rdmaHcas: ["mlx5_0:1"], rdmaDevices: ["/dev/infiniband/uverbs0"] } });
    expect(withDevices.placement.rdmaDevices).to.deep.equal(["/dev/infiniband/uverbs0"]);
    // Devices are where the engine runs, not what it runs: the command and its hash do not move.
    expect(withDevices.planSha256).to.equal(renderLaunchPlan({ ...base, policy: { ...base.policy, transport: "ucx_rdma", rdmaHcas: ["mlx5_0:1"] } }).planSha256);
  });

  it("tells UCX the GID index Gate D measured (UCX_IB_GID_INDEX) only when rdma.gidIndex is set, and only for ucx_rdma", () => {
    const rdma = { ...base.policy, transport: "ucx_rdma" as const, rdmaHcas: ["mlx5_0:1"] };
    expect(renderLaunchPlan({ ...base, policy: { ...rdma, rdmaGidIndex: 3 } }).env.UCX_IB_GID_INDEX).to.equal("3");
    expect(renderLaunchPlan({ ...base, policy: rdma }).env).to.not.have.property("UCX_IB_GID_INDEX");
    expect(renderLaunchPlan({ ...base, policy: { ...base.policy, rdmaGidIndex: 3 } }).env).to.not.have.property("UCX_IB_GID_INDEX");
  });

  it("records the command alone: launchRecord keeps exactly launch.json's fields", () => {
    const plan = renderLaunchPlan(base);
    const record = launchRecord(plan);
    expect(Object.keys(record)).to.deep.equal(["engineId", "argv", "env", "url", "tensorParallelSize", "maxModelLen", "planSha256"]);
    const { placement, dsRequired, ...command } = plan;
    expect(placement.gpuIds).to.deep.equal([0, 1]);
    expect(dsRequired).to.equal(false);
    expect(record).to.deep.equal(command);
    expect(JSON.stringify(launchRecord(record))).to.equal(JSON.stringify(record));
  });

  it("falls back to bfloat16 when the model does not say", () => {
    const plan = renderLaunchPlan({ ...base, model: { servedName: "m", checkpointDir: "/m" } });
    expect(flag(plan.argv, "--dtype")).to.equal("bfloat16");
  });

  it("renders the GPU ids and TP size it is given, defaulting neither (the launch policy resolved them)", () => {
    const plan = renderLaunchPlan({ ...base, engine: { ...base.engine, gpuIds: [3, 1], gpuIdsNamed: false }, policy: { ...base.policy, tensorParallelSize: 1 } });
    expect(plan.env.CUDA_VISIBLE_DEVICES).to.equal("3,1");
    expect(plan.placement).to.include({ gpuIdsNamed: false });
    expect(plan.placement.gpuIds).to.deep.equal([3, 1]);
    expect(flag(plan.argv, "--tensor-parallel-size")).to.equal("1");
    expect(plan.tensorParallelSize).to.equal(1);
  });

  it("changes its hash exactly when the serving command changes", () => {
    const a = renderLaunchPlan(base).planSha256;
    expect(renderLaunchPlan(base).planSha256).to.equal(a);
    expect(renderLaunchPlan({ ...base, policy: { ...base.policy, blockSize: 16 } }).planSha256).to.not.equal(a);
  });

  it("brackets an IPv6 fabric address in the URL", () => {
    const plan = renderLaunchPlan({ ...base, host: { ...base.host, fabricAddress: "2001:db8::11" } });
    expect(plan.url).to.equal("http://[2001:db8::11]:8100");
  });
});

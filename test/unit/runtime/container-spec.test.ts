import { expect } from "chai";
import { LaunchInputs, LaunchPlan, renderLaunchPlan } from "../../../lib/launch/plan";
import { containerSpec, ContainerRuntimeOptions, LABELS } from "../../../lib/runtime/container-spec";

const IMAGE = `sha256:${"a".repeat(64)}`;
const DIGEST = `registry.example/vllm/vllm-openai@sha256:${"b".repeat(64)}`;

/** An AMD host's render nodes as its sysfs numbers them: in probe order, GPU i of 8 at renderD(135 - i), not renderD(128 + i). */
const renderNodeOf = (i: number) => `/dev/dri/renderD${135 - i}`;

function inputs(vendor: "nvidia" | "amd" | "none", transport: "tcp" | "ucx_rdma", gpuIds: number[], rdmaDevices?: string[]): LaunchInputs {
  return {
    engine: { id: "e1", port: 8100, nixlPort: 5600, gpuIds, gpuIdsNamed: true },
    host: { alias: "a", fabricInterface: "fab0", fabricAddress: "198.18.0.11", vendor, ...(vendor === "amd" ? { renderNodes: gpuIds.map(renderNodeOf) } : {}) },
    model: { servedName: "tiny", checkpointDir: "/srv/models/tiny", dtype: "bfloat16", maxPositionEmbeddings: 8192 },
    policy: {
      vllmCommand: "/opt/venv/bin/vllm",
      transport,
      dtype: "model",
      kvCacheDtype: "auto",
      blockSize: 128,
      enforceEager: false,
      maxModelLen: 4096,
      maxNumSeqs: 8,
      gpuMemoryUtilization: 0.9,
      tensorParallelSize: Math.max(1, gpuIds.length),
      prefixCaching: true,
      ucxTcpPortRange: "6300-6500",
      kvLeaseDurationS: 30,
      ...(transport === "ucx_rdma" ? { rdmaHcas: ["mlx5_0:1"], rdmaDevices } : {}),
    },
  };
}

function options(plan: LaunchPlan, over: Partial<ContainerRuntimeOptions> = {}): ContainerRuntimeOptions {
  return {
    image: IMAGE,
    modelDir: "/srv/models/tiny",
    engineId: plan.engineId,
    stack: "dev",
    launchToken: "0123456789abcdef0123456789abcdef",
    envFile: "/var/lib/narwhal/e1/container.env",
    ...over,
  };
}

/** Values of every occurrence of a flag in a docker argv (up to the image). */
function values(argv: ReadonlyArray<string>, flag: string): string[] {
  const end = argv.indexOf(IMAGE) >= 0 ? argv.indexOf(IMAGE) : argv.length;
  const out: string[] = [];
  for (let i = 0; i < end; i++) if (argv[i] === flag) out.push(argv[i + 1]);
  return out;
}

const RDMA = ["/dev/infiniband/rdma_cm", "/dev/infiniband/uverbs0"];

interface Row {
  name: string;
  vendor: "nvidia" | "amd";
  transport: "tcp" | "ucx_rdma";
  gpuIds: number[];
  devices: string[];
  gpus?: string;
  visibility: [string, string];
  groupAdd: string[];
  capAdd: string[];
  securityOpt: string[];
  ulimit: string[];
}

const TABLE: Row[] = [
  {
    name: "NVIDIA over TCP",
    vendor: "nvidia", transport: "tcp", gpuIds: [2, 3],
    devices: [], gpus: '"device=2,3"', visibility: ["CUDA_VISIBLE_DEVICES", "0,1"],
    groupAdd: [], capAdd: [], securityOpt: [], ulimit: [],
  },
  {
    name: "NVIDIA over RDMA",
    vendor: "nvidia", transport: "ucx_rdma", gpuIds: [0],
    devices: RDMA, gpus: '"device=0"', visibility: ["CUDA_VISIBLE_DEVICES", "0"],
    groupAdd: [], capAdd: ["IPC_LOCK"], securityOpt: [], ulimit: ["memlock=-1:-1"],
  },
  {
    name: "ROCm over TCP",
    vendor: "amd", transport: "tcp", gpuIds: [1, 3],
    devices: ["/dev/kfd", "/dev/dri/renderD134", "/dev/dri/renderD132"], visibility: ["HIP_VISIBLE_DEVICES", "0,1"],
    groupAdd: ["video"], capAdd: ["SYS_PTRACE"], securityOpt: ["seccomp=unconfined"], ulimit: [],
  },
  {
    name: "ROCm over RDMA",
    vendor: "amd", transport: "ucx_rdma", gpuIds: [0, 1, 2, 3],
    devices: ["/dev/kfd", "/dev/dri/renderD135", "/dev/dri/renderD134", "/dev/dri/renderD133", "/dev/dri/renderD132", ...RDMA],
    visibility: ["HIP_VISIBLE_DEVICES", "0,1,2,3"],
    groupAdd: ["video"], capAdd: ["SYS_PTRACE", "IPC_LOCK"], securityOpt: ["seccomp=unconfined"], ulimit: ["memlock=-1:-1"],
  },
];

describe("container spec (docker run argv)", () => {
  for (const row of TABLE) {
    it(`renders ${row.name}`, () => {
      const plan = renderLaunchPlan(inputs(row.vendor, row.transport, row.gpuIds, RDMA));
      const spec = containerSpec(plan, options(plan));
      const argv = spec.runArgv;
      expect(argv.slice(0, 4)).to.deep.equal(["run", "--detach", "--name", "narwhal-dev-e1"]);
      expect(values(argv, "--network")).to.deep.equal(["host"]);
      expect(values(argv, "--ipc")).to.deep.equal(["host"]);
      expect(values(argv, "--pull")).to.deep.equal(["never"]);
      expect(values(argv, "--mount")).to.deep.equal(["type=bind,source=/srv/models/tiny,target=/model,readonly"]);
      expect(values(argv, "--env-file")).to.deep.equal(["/var/lib/narwhal/e1/container.env"]);
      expect(values(argv, "--device")).to.deep.equal(row.devices);
      expect(values(argv, "--gpus")).to.deep.equal(row.gpus ? [row.gpus] : []);
      expect(values(argv, "--group-add")).to.deep.equal(row.groupAdd);
      expect(values(argv, "--cap-add")).to.deep.equal(row.capAdd);
      expect(values(argv, "--security-opt")).to.deep.equal(row.securityOpt);
      expect(values(argv, "--ulimit")).to.deep.equal(row.ulimit);
      expect(argv.some((a) => a === "/dev/dri" || a.startsWith("/dev/dri:"))).to.equal(false);

      // The plan's environment, with GPU visibility renumbered for the container's own device list.
      const env = values(argv, "-e");
      expect(env).to.include(`${row.visibility[0]}=${row.visibility[1]}`);
      expect(env).to.include("VLLM_NIXL_SIDE_CHANNEL_PORT=5600");
      expect(env).to.include(`UCX_TLS=${plan.env.UCX_TLS}`);
      expect(env.filter((e) => /_VISIBLE_DEVICES=/.test(e))).to.have.length(1);
      expect(env.some((e) => e.startsWith("VLLM_API_KEY"))).to.equal(false);

      expect(Object.fromEntries(values(argv, "--label").map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]))).to.deep.equal({
        [LABELS.stack]: "dev",
        [LABELS.engine]: "e1",
        [LABELS.planSha256]: plan.planSha256,
        // What another engine waiting for these GPUs reads (lib/runtime/gpu-claims.ts).
        [LABELS.gpus]: row.gpuIds.join(","),
        [LABELS.specSha256]: spec.specSha256,
        [LABELS.launchToken]: "0123456789abcdef0123456789abcdef",
      });

      // Image, then the arguments after the entrypoint's `vllm serve`: the model is /model.
      const at = argv.indexOf(IMAGE);
      expect(at).to.be.greaterThan(0);
      expect(argv.slice(at + 1)).to.deep.equal(spec.serveArgs);
      expect(spec.serveArgs).to.deep.equal(["/model", ...plan.argv.slice(3)]);
      expect(argv).not.to.include("serve");
      expect(argv).not.to.include("/opt/venv/bin/vllm");
      expect(argv).not.to.include("/srv/models/tiny");
    });
  }

  it("adds --runtime when asked, and accepts a registry digest", () => {
    const plan = renderLaunchPlan(inputs("nvidia", "tcp", [0]));
    const spec = containerSpec(plan, options(plan, { image: DIGEST, dockerRuntime: "nvidia" }));
    expect(spec.runArgv.slice(spec.runArgv.indexOf("--runtime"), spec.runArgv.indexOf("--runtime") + 4)).to.deep.equal([
      "--runtime", "nvidia", "--gpus", '"device=0"',
    ]);
    expect(spec.runArgv[spec.runArgv.length - spec.serveArgs.length - 1]).to.equal(DIGEST);
  });

  it("passes the plan through unchanged for a simulated host (vendor none)", () => {
    const plan = renderLaunchPlan(inputs("none", "tcp", [0]));
    const spec = containerSpec(plan, options(plan));
    expect(spec.env).to.deep.equal(plan.env);
    expect(spec.runArgv).not.to.include("--gpus").and.not.to.include("--device");
  });

  it("hashes the spec without the launch token, and changes the hash with the image or devices", () => {
    const plan = renderLaunchPlan(inputs("nvidia", "tcp", [2, 3]));
    const a = containerSpec(plan, options(plan));
    const b = containerSpec(plan, options(plan, { launchToken: "ffffffffffffffffffffffffffffffff" }));
    expect(b.specSha256).to.equal(a.specSha256);
    expect(b.runArgv).not.to.deep.equal(a.runArgv);
    expect(containerSpec(plan, options(plan, { image: `sha256:${"c".repeat(64)}` })).specSha256).not.to.equal(a.specSha256);
    expect(containerSpec(plan, options(plan, { dockerRuntime: "nvidia" })).specSha256).not.to.equal(a.specSha256);
  });

  it("rewrites tokenizer paths: inside the checkpoint to /model, elsewhere to a read-only /tokenizer mount", () => {
    const base = inputs("nvidia", "tcp", [0]);
    const inside = renderLaunchPlan({ ...base, model: { ...base.model, tokenizer: "/srv/models/tiny/tok" } });
    const s1 = containerSpec(inside, options(inside));
    expect(s1.serveArgs[s1.serveArgs.indexOf("--tokenizer") + 1]).to.equal("/model/tok");
    expect(values(s1.runArgv, "--mount")).to.have.length(1);

    const outside = renderLaunchPlan({ ...base, model: { ...base.model, tokenizer: "/srv/tokenizers/t" } });
    const s2 = containerSpec(outside, options(outside));
    expect(s2.serveArgs[s2.serveArgs.indexOf("--tokenizer") + 1]).to.equal("/tokenizer");
    expect(values(s2.runArgv, "--mount")).to.include("type=bind,source=/srv/tokenizers/t,target=/tokenizer,readonly");

    const hub = renderLaunchPlan({ ...base, model: { ...base.model, tokenizer: "org/name" } });
    const s3 = containerSpec(hub, options(hub));
    expect(s3.serveArgs[s3.serveArgs.indexOf("--tokenizer") + 1]).to.equal("org/name");
  });

  it("maps exactly the render nodes discovery read for the engine's GPUs, in GPU order", () => {
    const plan = renderLaunchPlan(inputs("amd", "tcp", [0, 1]));
    expect(plan.placement.renderNodes).to.deep.equal(["/dev/dri/renderD135", "/dev/dri/renderD134"]);
    const spec = containerSpec(plan, options(plan));
    expect(values(spec.runArgv, "--device")).to.deep.equal(["/dev/kfd", "/dev/dri/renderD135", "/dev/dri/renderD134"]);
  });

  it("renumbers a visibility variable the engine's own environment adds, when it names the placement's GPUs", () => {
    const base = inputs("amd", "tcp", [2, 3]);
    const plan = renderLaunchPlan({ ...base, policy: { ...base.policy, engineEnv: { ROCR_VISIBLE_DEVICES: "2,3" } } });
    const spec = containerSpec(plan, options(plan));
    expect([spec.env.HIP_VISIBLE_DEVICES, spec.env.ROCR_VISIBLE_DEVICES]).to.deep.equal(["0,1", "0,1"]);
    expect(spec.labels[LABELS.gpus]).to.equal("2,3");
  });

  const amdPlaced = (over: Partial<LaunchPlan["placement"]>) => (): LaunchPlan => {
    const plan = renderLaunchPlan(inputs("amd", "tcp", [2, 3]));
    return { ...plan, placement: { ...plan.placement, ...over } };
  };
  const withEnv = (engineEnv: Record<string, string>) => (): LaunchPlan => {
    const base = inputs("nvidia", "tcp", [2, 3]);
    return renderLaunchPlan({ ...base, policy: { ...base.policy, engineEnv } });
  };
  const REFUSALS: Array<[string, Partial<ContainerRuntimeOptions>, RegExp, (() => LaunchPlan)?]> = [
    ["a mutable tag", { image: "vllm/vllm-openai:latest" }, /not immutable/],
    ["a short image ID", { image: "sha256:abc" }, /not immutable/],
    ["a visibility variable of the engine's env that names other GPUs than the placement", {}, /ROCR_VISIBLE_DEVICES=0,1 but the container is given GPUs 2,3/, withEnv({ ROCR_VISIBLE_DEVICES: "0,1" })],
    ["RDMA transport without RDMA devices", {}, /transport is ucx_rdma \(UCX_TLS=rc,sm,self,cuda_copy\) but no RDMA devices are given to the container/, () => renderLaunchPlan(inputs("nvidia", "ucx_rdma", [2, 3]))],
    ["an RDMA device outside /dev", {}, /RDMA device "infiniband\/uverbs0" is not a \/dev path/, () => renderLaunchPlan(inputs("nvidia", "ucx_rdma", [2, 3], ["infiniband/uverbs0"]))],
    ["a stack name docker cannot name a container with", { stack: "my stack" }, /cannot be part of a container name/],
    ["a model dir other than the plan's", { modelDir: "/srv/models/other" }, /serves \/srv\/models\/tiny but the mounted model dir is \/srv\/models\/other/],
    ["the whole of /dev/dri", {}, /render node "\/dev\/dri" is not \/dev\/dri\/renderD<N>; the whole of \/dev\/dri is never mapped/, amdPlaced({ renderNodes: ["/dev/dri", "/dev/dri/renderD129"] })],
    [
      "an AMD placement without the render nodes discovery reads",
      {},
      /container spec: the placement has 0 render node\(s\) for GPU ids 2,3; discovery reads them from the host's \/sys\/class\/drm/,
      amdPlaced({ renderNodes: [] }),
    ],
    ["an engine id other than the plan's", { engineId: "e2" }, /does not match the plan's e1/],
  ];
  for (const [what, over, message, makePlan] of REFUSALS) {
    it(`refuses ${what}`, () => {
      const plan = makePlan ? makePlan() : renderLaunchPlan(inputs("nvidia", "tcp", [2, 3]));
      expect(() => containerSpec(plan, options(plan, over))).to.throw(message);
    });
  }
});

import { expect } from "chai";
import type { CacheGroupError } from "../../../lib/cache/errors";
import {
  budgetGroups,
  cacheGeometryDigest,
  cacheGroups,
  cacheSignature,
  gpuVisibilityEnv,
  layoutDisagreements,
  runtimeImageId,
  SIGNATURE_FIELDS,
  signatureDocument,
  signatureInputsFor,
  type CacheSignatureInputs,
  type GroupEngine,
} from "../../../lib/cache/groups";
import type { DockerRuntimeIdentity, NativeRuntimeIdentity } from "../../../lib/discovery/runtime";
import type { CacheLayout } from "../../../lib/engine/cache-layout";
import { renderLaunchPlan, type LaunchInputs } from "../../../lib/launch/plan";
import { GQA_FP8_TP1, GQA_TP1, GQA_TP2 } from "../fabric/layouts";

function thrown(fn: () => unknown): CacheGroupError {
  try {
    fn();
  } catch (err) {
    return err as CacheGroupError;
  }
  throw new Error("expected an error");
}

const BASE: CacheSignatureInputs = {
  image_id: "sha256:" + "1f".repeat(32),
  model_config_sha256: "9c".repeat(32),
  accelerator: "NVIDIA H100 80GB HBM3",
  tensor_parallel_size: 2,
  gpu_visibility_env: "CUDA_VISIBLE_DEVICES",
  runtime: { vllm: "0.29.0", torch: "2.9.0", nixl: "0.7.1" },
  transport: "tcp",
};
/**
 * Computed with the runbook's own code: hashlib.sha256(json.dumps(inputs, sort_keys=True).encode())
 * .hexdigest()[:16], on CPython 3.
 */
const BASE_SIGNATURE = "9967555d4ac5d6d9";
const UNICODE_SIGNATURE = "a25e37389dd82bd5";

describe("cache signature", () => {
  it("equals the runbook script's value, over Python's sorted-key JSON", () => {
    expect(signatureDocument(BASE)).to.equal(
      '{"accelerator": "NVIDIA H100 80GB HBM3", "gpu_visibility_env": "CUDA_VISIBLE_DEVICES", ' +
        '"image_id": "sha256:1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f", ' +
        '"model_config_sha256": "9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c", ' +
        '"runtime": {"nixl": "0.7.1", "torch": "2.9.0", "vllm": "0.29.0"}, "tensor_parallel_size": 2, "transport": "tcp"}',
    );
    expect(cacheSignature(BASE)).to.equal(BASE_SIGNATURE);
    expect(cacheSignature({ ...BASE, accelerator: "AMD Instinct™ MI300X — 192 GB 😀", gpu_visibility_env: "HIP_VISIBLE_DEVICES" })).to.equal(UNICODE_SIGNATURE);
  });

  it("does not depend on key order, at the top or inside runtime", () => {
    const reversed = Object.fromEntries(Object.entries(BASE).reverse()) as unknown as CacheSignatureInputs;
    expect(cacheSignature(reversed)).to.equal(BASE_SIGNATURE);
    expect(cacheSignature({ ...BASE, runtime: { nixl: "0.7.1", vllm: "0.29.0", torch: "2.9.0" } })).to.equal(BASE_SIGNATURE);
  });

  it("ignores GPU indices, addresses, device paths and anything else outside the seven fields", () => {
    const extra = { ...BASE, gpu_ids: [2, 3], fabric_address: "10.0.1.12", devices: ["/dev/nvidia2"], host: "gpu-b", port: 8101 };
    expect(cacheSignature(extra)).to.equal(BASE_SIGNATURE);
    expect(signatureDocument(extra)).to.equal(signatureDocument(BASE));
  });

  it("changes with each of the seven fields", () => {
    const changed: Record<(typeof SIGNATURE_FIELDS)[number], Partial<CacheSignatureInputs>> = {
      image_id: { image_id: "sha256:" + "2e".repeat(32) },
      model_config_sha256: { model_config_sha256: "8d".repeat(32) },
      accelerator: { accelerator: "NVIDIA H200" },
      tensor_parallel_size: { tensor_parallel_size: 4 },
      gpu_visibility_env: { gpu_visibility_env: "HIP_VISIBLE_DEVICES" },
      runtime: { runtime: { ...BASE.runtime, vllm: "0.29.1" } },
      transport: { transport: "ucx_rdma" },
    };
    expect(Object.keys(changed)).to.deep.equal([...SIGNATURE_FIELDS]);
    const signatures = SIGNATURE_FIELDS.map((f) => cacheSignature({ ...BASE, ...changed[f] }));
    expect(new Set([BASE_SIGNATURE, ...signatures]).size).to.equal(SIGNATURE_FIELDS.length + 1);
    for (const s of signatures) expect(s).to.match(/^[0-9a-f]{16}$/);
  });

  it("refuses inputs of the wrong kind, naming the field", () => {
    const cases: Array<[Partial<Record<keyof CacheSignatureInputs, unknown>>, string]> = [
      [{ image_id: "" }, 'cache signature input image_id must be a non-empty string; got ""'],
      [{ transport: undefined }, "cache signature input transport must be a non-empty string; got nothing"],
      [{ tensor_parallel_size: 0 }, "cache signature input tensor_parallel_size must be a positive integer; got 0"],
      [{ gpu_visibility_env: ["0", "1"] }, 'cache signature input gpu_visibility_env must be a string (the visibility variable\'s name); got ["0","1"]'],
      [{ runtime: { vllm: 29 } }, 'cache signature input runtime must be an object of package name → version strings; got {"vllm":29}'],
    ];
    for (const [patch, message] of cases) {
      const e = thrown(() => cacheSignature({ ...BASE, ...patch } as CacheSignatureInputs));
      expect(e.code).to.equal("NARWHAL_CACHE_SIGNATURE_INPUT");
      expect(e.message).to.equal(message);
    }
  });
});

describe("signature inputs from measured facts", () => {
  const native: NativeRuntimeIdentity = {
    kind: "native",
    command: "vllm",
    path: "/opt/vllm/bin/vllm",
    scriptKind: "python",
    interpreter: "/opt/vllm/bin/python3",
    vllmVersion: "0.29.0",
    packages: { vllm: "0.29.0", torch: "2.9.0", "nixl-cu12": "0.7.1", numpy: "2.1.3" },
    packageCount: 4,
    packagesSource: "pip",
    packagesUnknownReason: null,
  };
  const launch = (engineId: string, gpuIds: number[], address: string): LaunchInputs => ({
    engine: { id: engineId, port: 8100, nixlPort: 5600, gpuIds, gpuIdsNamed: true },
    host: { alias: engineId === "e1" ? "gpu-a" : "gpu-b", fabricInterface: "fab0", fabricAddress: address, vendor: "nvidia" },
    model: { servedName: "tiny", checkpointDir: "/models/tiny" },
    policy: {
      vllmCommand: "vllm",
      transport: "tcp",
      dtype: "bfloat16",
      kvCacheDtype: "auto",
      blockSize: 128,
      enforceEager: true,
      maxModelLen: 16384,
      maxNumSeqs: 8,
      gpuMemoryUtilization: 0.9,
      tensorParallelSize: gpuIds.length,
      prefixCaching: false,
      ucxTcpPortRange: "6300-6500",
      kvLeaseDurationS: 30,
    },
  });
  const sources = (plan: ReturnType<typeof renderLaunchPlan>) => ({ runtime: native, modelConfigSha256: "9c".repeat(32), accelerator: "NVIDIA H100 80GB HBM3", plan, transport: "tcp" as const });

  it("records the visibility variable's name, never the GPU indices", () => {
    expect(gpuVisibilityEnv({ CUDA_VISIBLE_DEVICES: "0,1", UCX_TLS: "tcp" })).to.equal("CUDA_VISIBLE_DEVICES");
    expect(gpuVisibilityEnv({ ROCR_VISIBLE_DEVICES: "0", HIP_VISIBLE_DEVICES: "1" })).to.equal("HIP_VISIBLE_DEVICES,ROCR_VISIBLE_DEVICES");
    expect(gpuVisibilityEnv({})).to.equal("");
  });

  it("groups engines on other GPUs and hosts together when product and TP shape match", () => {
    const a = signatureInputsFor(sources(renderLaunchPlan(launch("e1", [0, 1], "10.0.1.11"))));
    const b = signatureInputsFor(sources(renderLaunchPlan(launch("e2", [6, 7], "10.0.1.12"))));
    expect(a).to.deep.equal(b);
    expect(a).to.deep.include({ accelerator: "NVIDIA H100 80GB HBM3", tensor_parallel_size: 2, gpu_visibility_env: "CUDA_VISIBLE_DEVICES", transport: "tcp" });
    expect(a.runtime).to.deep.equal({ "nixl-cu12": "0.7.1", torch: "2.9.0", vllm: "0.29.0" });
    const tp4 = signatureInputsFor(sources(renderLaunchPlan(launch("e2", [4, 5, 6, 7], "10.0.1.12"))));
    expect(cacheSignature(tp4)).to.not.equal(cacheSignature(a));
  });

  it("native image_id is the runtime identity digest: any package change moves it, the free-text reason does not", () => {
    const id = runtimeImageId(native);
    expect(id).to.match(/^sha256:[0-9a-f]{64}$/);
    expect(runtimeImageId({ ...native, packagesUnknownReason: "pip timed out" })).to.equal(id);
    // numpy is not among the runtime packages of interest, but it is part of the native identity.
    const numpy = { ...native, packages: { ...native.packages!, numpy: "2.2.0" } };
    expect(runtimeImageId(numpy)).to.not.equal(id);
    expect(signatureInputsFor({ ...sources(renderLaunchPlan(launch("e1", [0], "10.0.1.11"))), runtime: numpy }).runtime).to.deep.equal(
      signatureInputsFor(sources(renderLaunchPlan(launch("e1", [0], "10.0.1.11")))).runtime,
    );
  });

  it("container image_id is the image ID; no GPU becomes accelerator \"none\"", () => {
    const docker = { kind: "docker", imageId: "sha256:" + "ab".repeat(32), packages: null } as unknown as DockerRuntimeIdentity;
    expect(runtimeImageId(docker)).to.equal("sha256:" + "ab".repeat(32));
    const inputs = signatureInputsFor({ ...sources(renderLaunchPlan(launch("e1", [0], "10.0.1.11"))), runtime: docker, accelerator: null });
    expect(inputs).to.deep.include({ image_id: "sha256:" + "ab".repeat(32), accelerator: "none", runtime: {} });
  });
});

describe("cache groups", () => {
  const other: CacheSignatureInputs = { ...BASE, tensor_parallel_size: 1 };
  const OTHER_SIGNATURE = cacheSignature(other);
  // Listed out of index order on purpose.
  const engines: GroupEngine[] = [
    { id: "e4", index: 4, inputs: BASE },
    { id: "e2", index: 2, inputs: other },
    { id: "e1", index: 1, inputs: { ...BASE, gpu_ids: [2, 3] } as CacheSignatureInputs },
    { id: "e0", index: 0, inputs: other },
    { id: "e3", index: 3, inputs: BASE },
  ];

  it("groups by signature, ordered by signature, the lowest index representing each", () => {
    const groups = cacheGroups(engines);
    const expected = [
      { signature: BASE_SIGNATURE, inputs: BASE, representative: "e1", members: ["e1", "e3", "e4"] },
      { signature: OTHER_SIGNATURE, inputs: other, representative: "e0", members: ["e0", "e2"] },
    ].sort((a, b) => (a.signature < b.signature ? -1 : 1));
    expect(groups).to.deep.equal(expected);
  });

  it("is the same whatever order the engines come in", () => {
    expect(cacheGroups([...engines].reverse())).to.deep.equal(cacheGroups(engines));
  });

  it("refuses duplicate ids or indices", () => {
    const e = thrown(() => cacheGroups([engines[0], { ...engines[1], id: "e4" }, { ...engines[2], index: 4 }]));
    expect(e.code).to.equal("NARWHAL_CACHE_GROUP_ENGINES");
    expect(e.message).to.equal("cannot group the engines: engine id e4 appears more than once; engines e4 and e1 share index 4");
  });
});

describe("layout disagreement and budget groups", () => {
  const engines: GroupEngine[] = ["e0", "e1", "e2", "e3"].map((id, index) => ({ id, index, inputs: { ...BASE, tensor_parallel_size: 1 } }));
  const groups = cacheGroups(engines);
  const signature = groups[0].signature;
  const block32: CacheLayout = {
    ...GQA_TP1,
    ranks: GQA_TP1.ranks.map((r) => ({ ...r, blockSize: 32, pageSizeBytes: 131072 })),
  };
  const moreBlocks: CacheLayout = { ...GQA_TP1, ranks: GQA_TP1.ranks.map((r) => ({ ...r, numGpuBlocks: 19876 })) };

  it("finds none when every member matches its representative (capacity aside)", () => {
    expect(layoutDisagreements(groups, { e0: GQA_TP1, e1: moreBlocks, e2: GQA_TP1, e3: GQA_TP1 })).to.deep.equal([]);
    expect(cacheGeometryDigest(moreBlocks)).to.equal(cacheGeometryDigest(GQA_TP1));
  });

  it("names each member that differs, and the fields", () => {
    const layouts = new Map<string, CacheLayout>([
      ["e0", GQA_TP1],
      ["e1", block32],
      ["e2", GQA_TP1],
      ["e3", GQA_FP8_TP1],
    ]);
    expect(layoutDisagreements(groups, layouts)).to.deep.equal([
      {
        signature,
        representative: "e0",
        engineId: "e1",
        differences: [
          { field: "blockSize", representative: 16, member: 32 },
          { field: "pageSizeBytes", representative: 65536, member: 131072 },
        ],
      },
      {
        signature,
        representative: "e0",
        engineId: "e3",
        differences: [
          { field: "cacheDtype", representative: "auto", member: "fp8" },
          { field: "bytesPerTokenPerLayer", representative: 4096, member: 2048 },
          { field: "pageSizeBytes", representative: 65536, member: 32768 },
          { field: "bytesPerToken", representative: 131072, member: 65536 },
        ],
      },
    ]);
  });

  it("reports a different TP shape with its per-rank geometry", () => {
    const diff = layoutDisagreements(groups, { e0: GQA_TP1, e1: GQA_TP2, e2: GQA_TP1, e3: GQA_TP1 });
    expect(diff).to.have.length(1);
    expect(diff[0].differences.map((d) => d.field)).to.deep.equal([
      "tensorParallelSize",
      "rankCount",
      "numKvHeadsPerRank",
      "bytesPerTokenPerLayer",
      "pageSizeBytes",
      "bytesPerToken",
    ]);
  });

  it("refuses to compare before every member's cache is captured", () => {
    const e = thrown(() => layoutDisagreements(groups, { e0: GQA_TP1, e2: GQA_TP1 }));
    expect(e.code).to.equal("NARWHAL_CACHE_LAYOUT_MISSING");
    expect(e.message).to.equal("no captured cache layout for engines e1, e3; capture every engine's live cache (capture-cache) before comparing geometry or budgeting Gate D");
    expect(thrown(() => budgetGroups(groups, { e0: GQA_TP1, e1: GQA_TP1, e2: GQA_TP1 })).code).to.equal("NARWHAL_CACHE_LAYOUT_MISSING");
  });

  it("gives a uniform group one budget, represented by the group's representative", () => {
    const digest = cacheGeometryDigest(GQA_TP1);
    expect(budgetGroups(groups, { e0: GQA_TP1, e1: moreBlocks, e2: GQA_TP1, e3: GQA_TP1 })).to.deep.equal([
      { key: `${signature}-${digest.slice(7, 19)}`, signature, geometryDigest: digest, representative: "e0", members: ["e0", "e1", "e2", "e3"], layout: GQA_TP1 },
    ]);
  });

  it("gives a differing geometry its own budget, keeping the other part's key", () => {
    const uniformKey = budgetGroups(groups, { e0: GQA_TP1, e1: GQA_TP1, e2: GQA_TP1, e3: GQA_TP1 })[0].key;
    const split = budgetGroups(groups, { e0: GQA_TP1, e1: GQA_FP8_TP1, e2: GQA_TP1, e3: GQA_FP8_TP1 });
    expect(split.map((g) => [g.key, g.representative, g.members, g.layout])).to.deep.equal([
      [uniformKey, "e0", ["e0", "e2"], GQA_TP1],
      [`${signature}-${cacheGeometryDigest(GQA_FP8_TP1).slice(7, 19)}`, "e1", ["e1", "e3"], GQA_FP8_TP1],
    ]);
  });
});

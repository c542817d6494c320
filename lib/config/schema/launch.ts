/** `narwhal-fleet:launch` (the runbook's serving policy) and the per-engine overrides over it. */
import { RUNBOOK_DEFAULTS as R } from "../defaults";
import * as f from "../fields";
import * as fmt from "../formats";

const engineArgs = f.list(f.text("a command-line argument"), "a list of vLLM arguments, e.g. [\"--max-num-batched-tokens\", \"8192\"]");
const engineEnv = f.stringMap(fmt.ENV_NAME_PATTERN, fmt.ENV_NAME_RULE, "an object of environment variables, e.g. {VLLM_LOGGING_LEVEL: \"DEBUG\"}");

const transport = f.choice(["tcp", "ucx_rdma"]);
const dtype = f.choice(["model", "bfloat16", "float16", "float32"]);
const kvCacheDtype = f.choice(["auto", "fp8", "fp8_e4m3", "fp8_e5m2"]);
const blockSize = f.numberIn([1, 8, 16, 32, 64, 128, 256]);
const gpuMemoryUtilization = f.num({ gt: 0, max: 1 });

export const RdmaSchema = f.strict(
  {
    /** UCX_NET_DEVICES entries, `"<hca>:<port>"`. */
    hcas: f.list(f.matching(fmt.HCA_PATTERN, fmt.HCA_RULE), 'a list of "<hca>:<port>" entries, e.g. ["mlx5_0:1"]', {
      min: 1,
      unique: true,
    }),
    /** Device nodes the engine needs (mapped into containers, checked before launch). */
    devices: f
      .list(f.matching(fmt.DEVICE_PATTERN, fmt.DEVICE_RULE), 'a list of device paths, e.g. ["/dev/infiniband/uverbs0"]', {
        unique: true,
      })
      .default(() => []),
    /** RoCE GID index (UCX_IB_GID_INDEX), when the default is wrong. */
    gidIndex: f.num({ int: true, min: 0, max: 255 }).optional(),
  },
  "an object {hcas, devices, gidIndex?}",
);

export const EngineOverridesSchema = f.strict(
  {
    /** Tensor parallel size for this engine. */
    tensorParallelSize: f.positiveInt().optional(),
    /** Model dtype for this engine. */
    dtype: dtype.optional(),
    /** KV cache dtype for this engine. */
    kvCacheDtype: kvCacheDtype.optional(),
    /** Requested cache block size for this engine, tokens. */
    blockSize: blockSize.optional(),
    /** Maximum context for this engine, tokens. */
    maxModelLen: f.positiveInt().optional(),
    /** Maximum concurrent sequences for this engine. */
    maxNumSeqs: f.positiveInt().optional(),
    /** GPU memory fraction for this engine. */
    gpuMemoryUtilization: gpuMemoryUtilization.optional(),
    /** Replaces the default vLLM argument array for this engine. */
    engineArgs: engineArgs.optional(),
    /** Extra image runtime environment for this engine (program-owned names are refused). */
    engineEnv: engineEnv.optional(),
    /** KV transfer transport for this engine. */
    transport: transport.optional(),
    /** RDMA devices for this engine. */
    rdma: RdmaSchema.optional(),
    /** Initial latency limits for this engine. */
    slo: f
      .strict(
        {
          /** Time-to-first-token limit, seconds. */
          ttftS: f.seconds().optional(),
          /** Time-per-output-token limit, seconds. */
          tpotS: f.seconds().optional(),
        },
        "an object {ttftS?, tpotS?}",
      )
      .optional(),
  },
  "an object of per-engine launch overrides",
);

export const LaunchSchema = f.strict(
  {
    /** KV transfer transport: TCP on the fabric interface, or UCX over RDMA. */
    transport: transport.default(R.launch.transport),
    /** Model dtype; `model` = the checkpoint's, or bfloat16 when unspecified. */
    dtype: dtype.default(R.launch.dtype),
    /** KV cache dtype. */
    kvCacheDtype: kvCacheDtype.default(R.launch.kvCacheDtype),
    /** Requested cache block size, tokens. */
    blockSize: blockSize.default(R.launch.blockSize),
    /** `--enforce-eager`. */
    enforceEager: f.flag().default(R.launch.enforceEager),
    /** Maximum context, tokens; capped later by the model configuration. */
    maxModelLen: f.positiveInt().default(R.launch.maxModelLen),
    /** `--max-num-seqs`. */
    maxNumSeqs: f.positiveInt().default(R.launch.maxNumSeqs),
    /** `--gpu-memory-utilization`, in (0, 1]. */
    gpuMemoryUtilization: gpuMemoryUtilization.default(R.launch.gpuMemoryUtilization),
    /** Tensor parallel size; default every GPU the engine gets. */
    tensorParallelSize: f.positiveInt().optional(),
    /** Prefix caching (off while profiling). */
    prefixCaching: f.flag().default(R.launch.prefixCaching),
    /** Replaces the default vLLM argument array (program-owned flags are refused). */
    engineArgs: engineArgs.optional(),
    /** Extra image runtime environment (program-owned names are refused). */
    engineEnv: engineEnv.optional(),
    /** RDMA devices; required when `transport` is `ucx_rdma`. */
    rdma: RdmaSchema.optional(),
    /** UCX_TCP_PORT_RANGE, `"lo-hi"`. */
    ucxTcpPortRange: f.text('a port range "lo-hi"', fmt.portRangeProblem).default(R.launch.ucxTcpPortRange),
    /** NIXL `kv_lease_duration`, seconds. */
    kvLeaseDurationS: f.num({ int: true, min: 1, unit: "seconds" }).default(R.launch.kvLeaseDurationS),
  },
  "an object of launch policy",
);

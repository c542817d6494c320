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
    hcas: f
      .list(f.matching(fmt.HCA_PATTERN, fmt.HCA_RULE), 'a list of "<hca>:<port>" entries, e.g. ["mlx5_0:1"]', {
        min: 1,
        unique: true,
      })
      .describe("`UCX_NET_DEVICES` entries, `<hca>:<port>`."),
    devices: f
      .list(f.matching(fmt.DEVICE_PATTERN, fmt.DEVICE_RULE), 'a list of device paths, e.g. ["/dev/infiniband/uverbs0"]', {
        unique: true,
      })
      .default(() => [])
      .describe("Device nodes the engine needs (mapped into containers, checked before launch)."),
    gidIndex: f.num({ int: true, min: 0, max: 255 }).optional().describe("RoCE GID index (`UCX_IB_GID_INDEX`), when the default is wrong."),
  },
  "an object {hcas, devices, gidIndex?}",
);

export const EngineOverridesSchema = f.strict(
  {
    tensorParallelSize: f.positiveInt().optional().meta({ description: "Tensor parallel size for this engine.", defaultText: "`launch.tensorParallelSize`" }),
    dtype: dtype.optional().meta({ description: "Model dtype for this engine.", defaultText: "`launch.dtype`" }),
    kvCacheDtype: kvCacheDtype.optional().meta({ description: "KV cache dtype for this engine.", defaultText: "`launch.kvCacheDtype`" }),
    blockSize: blockSize.optional().meta({ description: "Requested cache block size for this engine, tokens.", defaultText: "`launch.blockSize`" }),
    maxModelLen: f.positiveInt().optional().meta({ description: "Maximum context for this engine, tokens.", defaultText: "`launch.maxModelLen`" }),
    maxNumSeqs: f.positiveInt().optional().meta({ description: "Maximum concurrent sequences for this engine.", defaultText: "`launch.maxNumSeqs`" }),
    gpuMemoryUtilization: gpuMemoryUtilization
      .optional()
      .meta({ description: "GPU memory fraction for this engine.", defaultText: "`launch.gpuMemoryUtilization`" }),
    engineArgs: engineArgs.optional().meta({ description: "Replaces the default vLLM argument array for this engine.", defaultText: "`launch.engineArgs`" }),
    engineEnv: engineEnv
      .optional()
      .describe("Extra image runtime environment for this engine, merged over `launch.engineEnv` (program-owned names are refused)."),
    transport: transport.optional().meta({ description: "KV transfer transport for this engine.", defaultText: "`launch.transport`" }),
    rdma: RdmaSchema.optional().meta({ description: "RDMA devices for this engine.", defaultText: "`launch.rdma`" }),
    slo: f
      .strict(
        {
          ttftS: f.seconds().optional().meta({ description: "Time-to-first-token limit, seconds.", defaultText: "`slo.ttftS`" }),
          tpotS: f.seconds().optional().meta({ description: "Time-per-output-token limit, seconds.", defaultText: "`slo.tpotS`" }),
        },
        "an object {ttftS?, tpotS?}",
      )
      .optional()
      .describe("Initial latency limits for this engine."),
  },
  "an object of per-engine launch overrides",
);

export const LaunchSchema = f.strict(
  {
    transport: transport.default(R.launch.transport).describe("KV transfer transport: `tcp` on the fabric interface, or UCX over RDMA (`ucx_rdma`)."),
    dtype: dtype.default(R.launch.dtype).describe("Model dtype; `model` is the checkpoint's, or bfloat16 when it is unspecified."),
    kvCacheDtype: kvCacheDtype.default(R.launch.kvCacheDtype).describe("KV cache dtype."),
    blockSize: blockSize.default(R.launch.blockSize).describe("Requested cache block size, tokens."),
    enforceEager: f.flag().default(R.launch.enforceEager).describe("`--enforce-eager`."),
    maxModelLen: f.positiveInt().default(R.launch.maxModelLen).describe("Maximum context, tokens; capped later by the model configuration."),
    maxNumSeqs: f.positiveInt().default(R.launch.maxNumSeqs).describe("`--max-num-seqs`."),
    gpuMemoryUtilization: gpuMemoryUtilization.default(R.launch.gpuMemoryUtilization).describe("`--gpu-memory-utilization`, in (0, 1]."),
    tensorParallelSize: f.positiveInt().optional().meta({ description: "Tensor parallel size.", defaultText: "every GPU the engine gets" }),
    prefixCaching: f.flag().default(R.launch.prefixCaching).describe("Prefix caching (off while profiling)."),
    engineArgs: engineArgs.optional().describe("Replaces the default vLLM argument array (program-owned flags are refused)."),
    engineEnv: engineEnv.optional().describe("Extra image runtime environment (program-owned names are refused)."),
    rdma: RdmaSchema.optional().describe("RDMA devices; required when `transport` is `ucx_rdma`."),
    ucxTcpPortRange: f.text('a port range "lo-hi"', fmt.portRangeProblem).default(R.launch.ucxTcpPortRange).describe("`UCX_TCP_PORT_RANGE`, `lo-hi`."),
    kvLeaseDurationS: f.num({ int: true, min: 1, unit: "seconds" }).default(R.launch.kvLeaseDurationS).describe("NIXL `kv_lease_duration`, seconds."),
  },
  "an object of launch policy",
).describe("The runbook's serving policy for every engine; `engines[].overrides` changes it per engine.");

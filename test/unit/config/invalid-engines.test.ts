/**
 * Broken `engines`: ids, references, GPU sharing, ports, roles, TP and program-owned settings. Each case
 * asserts the path and the full message: what was found, what is allowed, the fix.
 */
import { rejectsEach, type BadCase, type RawConfig } from "./fixtures";

const CASES: BadCase[] = [
  {
    name: "a single engine",
    edit: (c) => c.engines.pop(),
    issues: [
      [
        "engines",
        "found 1 engine; disaggregated serving needs at least 2 (a prefill producer and a decode consumer): add another engine",
      ],
    ],
  },
  {
    name: "unknown engine host",
    edit: (c) => (c.engines[1].host = "c"),
    issues: [["engines[1].host", '"c" is not the alias of any host; known aliases: a, b']],
  },
  {
    name: "duplicate engine id",
    edit: (c) => (c.engines[1].id = "e0"),
    issues: [["engines[1].id", '"e0" is already the id of engines[0]; engine ids must be unique']],
  },
  {
    name: "overlapping GPUs on one host",
    edit: (c) => {
      c.engines[0].host = "b";
      c.engines[1] = { id: "e1", host: "a", gpuIds: [2, 3] };
      c.engines.push({ id: "e2", host: "a", gpuIds: [3, 4] });
    },
    issues: [["engines[2].gpuIds", "GPU 3 is already used by engine e1 on host a"]],
  },
  {
    name: "engines sharing a host without GPU lists",
    edit: (c) => c.engines.push({ id: "e2", host: "a", gpuIds: [1] }),
    issues: [
      [
        "engines[0].gpuIds",
        "missing; engines e0 and e2 share host a, so each must list its own GPUs (without gpuIds an engine takes every GPU on the host)",
      ],
    ],
  },
  {
    name: "a GPU listed twice in one engine",
    edit: (c) => (c.engines[0].gpuIds = [0, 1, 0]),
    issues: [["engines[0].gpuIds[2]", "0 is listed twice; list each value once"]],
  },
  {
    name: "port clash between two engines on a host",
    edit: (c) => {
      c.engines[1].gpuIds = [0];
      c.engines.push({ id: "e2", host: "b", gpuIds: [1], attestationPort: 8101 });
    },
    issues: [
      [
        "engines[2].attestationPort",
        "engine e2's attestationPort 8101 clashes with engine e1's port 8101 (its default) on host b; choose a port that no other service on host b uses",
      ],
    ],
  },
  {
    name: "a port equal to the engine's own defaulted attestation port, named at the port the user wrote",
    edit: (c) => (c.engines[1].port = 8201),
    issues: [
      [
        "engines[1].port",
        "engine e1's port 8201 clashes with engine e1's attestationPort 8201 (its default) on host b; an engine's port, attestationPort and nixlPort must all differ",
      ],
    ],
  },
  {
    name: "a Prometheus port written onto an engine's defaulted port",
    edit: (c) => (c.observability = { enabled: true, prometheusPort: 8100 }),
    issues: [
      [
        "observability.prometheusPort",
        "the Prometheus port 8100 clashes with engine e0's port 8100 (its default) on host a; choose a port that no other service on host a uses",
      ],
    ],
  },
  {
    name: "the freshness exporter's port written onto the Prometheus port",
    edit: (c) => (c.observability = { enabled: true, freshnessPort: 9090 }),
    issues: [
      [
        "observability.freshnessPort",
        "the evidence freshness exporter's port 9090 clashes with the Prometheus port 9090 (its default) on host a; choose a port that no other service on host a uses",
      ],
    ],
  },
  {
    name: "an engine port on ib_write_bw's exchange port, on a host with a ucx_rdma engine only",
    edit: (c) => {
      c.engines[0].overrides = { transport: "ucx_rdma", rdma: { hcas: ["mlx5_0:1"] } };
      c.engines[0].port = 18515;
      c.engines[1].port = 18515;
    },
    issues: [
      [
        "engines[0].port",
        "engine e0's port 18515 clashes with the ib_write_bw port 18515 (its default) on host a; choose a port that no other service on host a uses",
      ],
    ],
  },
  {
    name: "own-port clash",
    edit: (c) => (c.engines[0].nixlPort = 8100),
    issues: [
      [
        "engines[0].nixlPort",
        "engine e0's nixlPort 8100 clashes with engine e0's port 8100 (its default) on host a; an engine's port, attestationPort and nixlPort must all differ",
      ],
    ],
  },
  {
    name: "overlapping transfer port ranges on one host",
    edit: (c) => {
      c.engines[0].gpuIds = [0];
      c.engines[0].transferPortRange = "7000-7100";
      c.engines.push({ id: "e2", host: "a", gpuIds: [1], transferPortRange: "7050-7150" });
    },
    issues: [
      [
        "engines[2].transferPortRange",
        'engine e2\'s transfer ports 7050-7150 overlap engine e0\'s transfer ports 7000-7100 on host a; give each engine on host a its own transferPortRange, e.g. "7101-7201"',
      ],
    ],
  },
  {
    name: "a reversed transfer port range",
    edit: (c) => (c.engines[0].transferPortRange = "6500-6300"),
    issues: [["engines[0].transferPortRange", 'found "6500-6300"; expected "<lo>-<hi>" with 1 ≤ lo < hi ≤ 65535 (e.g. "6300-6500")']],
  },
  {
    name: "router port clashing with an engine on the router host",
    edit: (c) => (c.engines[0].port = 8000),
    issues: [
      [
        // Reported at the port the user wrote, not at the router's default they never set.
        "engines[0].port",
        "engine e0's port 8000 clashes with the router port 8000 (its default) on host a; choose a port that no other service on host a uses",
      ],
    ],
  },
  {
    name: "the router's backend port (router.port + 1 by default) clashing with an engine on the router host",
    edit: (c) => (c.engines[0].port = 8001),
    issues: [
      [
        "engines[0].port",
        "engine e0's port 8001 clashes with the router's backend port 8001 (its default) on host a; choose a port that no other service on host a uses",
      ],
    ],
  },
  {
    name: "router port 65535 with no backend port above it",
    edit: (c) => (c.router = { ...c.router, port: 65535 }),
    issues: [["router.backendPort", "router.port 65535 leaves no port above it for the router's backend (router.port + 1); set router.backendPort to a free port"]],
  },
  {
    name: "all engines pinned prefill",
    edit: (c) => c.engines.forEach((e: RawConfig) => Object.assign(e, { role: "prefill", pin: true })),
    issues: [["engines", 'all 2 engines are pinned to prefill; at least one engine must be able to decode: unpin one, or set its role to "decode"']],
  },
  {
    name: "explicit roles with no prefill engine",
    edit: (c) => (c.engines[0].role = "decode"),
    issues: [["engines", 'no engine starts as prefill (e0 decode, e1 decode); set at least one engine\'s role to "prefill"']],
  },
  {
    name: "TP not dividing the GPU count",
    edit: (c) => {
      c.engines[1].gpuIds = [0, 1, 2, 3];
      c.engines[1].overrides = { tensorParallelSize: 3 };
    },
    issues: [
      [
        "engines[1].overrides.tensorParallelSize",
        "tensor parallel size 3 must divide engine e1's 4 GPUs (gpuIds [0, 1, 2, 3]); use 1, 2 or 4",
      ],
    ],
  },
  {
    name: "fleet-wide TP larger than an engine's GPU list",
    edit: (c) => {
      c.launch = { tensorParallelSize: 2 };
      c.engines[0].gpuIds = [5];
    },
    issues: [
      [
        "launch.tensorParallelSize",
        "tensor parallel size 2 must divide engine e0's 1 GPU (gpuIds [5]); use 1, or set engines[0].overrides.tensorParallelSize",
      ],
    ],
  },
  {
    name: "replicas with different TP shapes",
    edit: (c) => {
      c.engines[0].gpuIds = [0, 1];
      c.engines[1].gpuIds = [0];
    },
    issues: [
      [
        "engines[1].gpuIds",
        "engine e1 would run with tensor parallel size 1, but engine e0 runs with 2; all replicas need the same TP shape: give every engine as many GPUs and the same tensorParallelSize",
      ],
    ],
  },
  {
    name: "engineEnv overriding a program-owned variable",
    edit: (c) => (c.engines[1].overrides = { engineEnv: { VLLM_LOGGING_LEVEL: "DEBUG", CUDA_VISIBLE_DEVICES: "0,1" } }),
    issues: [
      [
        "engines[1].overrides.engineEnv.CUDA_VISIBLE_DEVICES",
        "engine e1 overrides CUDA_VISIBLE_DEVICES, which the program sets itself from engines[].gpuIds; remove it from engineEnv",
      ],
    ],
  },
  {
    name: "fleet-wide engineEnv setting the API key",
    edit: (c) => (c.launch = { engineEnv: { VLLM_API_KEY: "do-not-echo-me" } }),
    issues: [
      [
        "launch.engineEnv.VLLM_API_KEY",
        "launch (every engine) overrides VLLM_API_KEY, which the program sets itself from the engineApiKey secret; remove it from engineEnv",
      ],
    ],
  },
  {
    name: "engineArgs with --port",
    edit: (c) => (c.engines[0].overrides = { engineArgs: ["--max-num-batched-tokens", "8192", "--port", "9000"] }),
    issues: [
      [
        "engines[0].overrides.engineArgs[2]",
        "engine e0 passes --port, which the program sets itself from engines[].port; remove it from engineArgs",
      ],
    ],
  },
  {
    name: "engineArgs with an owned flag in underscore=value form",
    edit: (c) => (c.launch = { engineArgs: ["--served_model_name=other"] }),
    issues: [
      [
        "launch.engineArgs[0]",
        "launch (every engine) passes --served-model-name, which the program sets itself from model.servedName; remove it from engineArgs",
      ],
    ],
  },
  {
    name: "an engineEnv value that is not a string (value never echoed)",
    edit: (c) => (c.launch = { engineEnv: { NCCL_DEBUG: 1 } }),
    issues: [["launch.engineEnv.NCCL_DEBUG", "found a number; expected a string value (quote numbers and booleans)"]],
  },
];

describe("config: invalid engines", () => rejectsEach(CASES));

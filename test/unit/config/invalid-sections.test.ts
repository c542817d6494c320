/**
 * Broken model, runtime, launch, slo, router, ssh and profiling values, and unknown keys. Each case
 * asserts the path and the full message: what was found, what is allowed, the fix.
 */
import { DIGEST, rejectsEach, type BadCase } from "./fixtures";

const KNOWN_KEYS = "hosts, engines, model, runtime, launch, slo, router, observability, ssh, fabric, profiling, attestation, preflight, calibration, trial, evidence, rollout";
const MUTABLE = "pin an image ID (sha256:…) or a digest (repo@sha256:…)";

const STORE_FORM = "expected s3://<bucket>[/<prefix>]?endpoint=<http(s)://host:port>&region=<region>";

const CASES: BadCase[] = [
  {
    name: "an evidence store that is not s3",
    edit: (c) => (c.evidence = { store: "file:///srv/evidence" }),
    issues: [["evidence.store", `evidence store "file:///srv/evidence" has scheme "file", not s3; ${STORE_FORM}`]],
  },
  {
    name: "an evidence store URL holding credentials",
    edit: (c) => (c.evidence = { store: "s3://AKID:secret@narwhal?endpoint=http://127.0.0.1:8333" }),
    issues: [
      [
        "evidence.store",
        `evidence store "s3://AKID:secret@narwhal?endpoint=http://127.0.0.1:8333" holds credentials: give them in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY instead, never in config; ${STORE_FORM}`,
      ],
    ],
  },
  {
    name: "relative checkpointDir",
    edit: (c) => (c.model.checkpointDir = "models/qwen3-8b"),
    issues: [["model.checkpointDir", 'found "models/qwen3-8b"; expected an absolute path without ".." (e.g. "/srv/models/qwen3-8b")']],
  },
  {
    name: "empty servedName",
    edit: (c) => (c.model.servedName = ""),
    issues: [["model.servedName", 'found ""; expected a non-empty model name (e.g. "qwen3-8b")']],
  },
  {
    name: "missing model",
    edit: (c) => delete c.model,
    issues: [
      ["model", 'missing; set it to {servedName, checkpointDir}, e.g. {servedName: "qwen3-8b", checkpointDir: "/srv/models/qwen3-8b"}'],
    ],
  },
  {
    name: "mutable image tag",
    edit: (c) => (c.runtime = { kind: "docker-cli", image: "vllm/vllm-openai:latest" }),
    issues: [["runtime.image", `"vllm/vllm-openai:latest" is a mutable tag; ${MUTABLE}`]],
  },
  {
    name: "a truncated image digest",
    edit: (c) => (c.runtime = { kind: "docker", image: "vllm/vllm-openai@sha256:abc123" }),
    issues: [
      [
        "runtime.image",
        `"vllm/vllm-openai@sha256:abc123" has a malformed digest: expected 64 lowercase hex digits after "sha256:"; ${MUTABLE}`,
      ],
    ],
  },
  {
    name: "an attestation command with arguments",
    edit: (c) => (c.attestation = { command: "narwhal-attest --port 1", startTimeoutS: 0 }),
    issues: [
      ["attestation.command", 'found "narwhal-attest --port 1"; expected one command name or path, without spaces'],
      ["attestation.startTimeoutS", "found 0; allowed: a positive number (seconds)"],
    ],
  },
  {
    name: "missing image for docker runtime",
    edit: (c) => (c.runtime = { kind: "docker-cli" }),
    issues: [["runtime.image", `missing; runtime.kind "docker-cli" runs engines in a container and needs an image: ${MUTABLE}`]],
  },
  {
    name: "an image with the native runtime",
    edit: (c) => (c.runtime = { image: DIGEST }),
    issues: [
      [
        "runtime.image",
        'set, but runtime.kind is "native", which runs runtime.vllmCommand on the host and never uses an image; set runtime.kind to "docker-cli" or "docker", or remove runtime.image',
      ],
    ],
  },
  {
    name: "a runbook launch directory with the docker provider runtime",
    edit: (c) => {
      c.runtime = { kind: "docker", image: DIGEST };
      c.engines[0].runbookRun = "/srv/runbook/runs/engine-launch-1";
    },
    issues: [
      [
        "engines[0].runbookRun",
        'set, but runtime.kind is "docker"; adopting an engine the runbook\'s launcher started needs runtime.kind "native" or "docker-cli" (the docker provider only manages containers it created)',
      ],
    ],
  },
  {
    name: "a relative runbook launch directory",
    edit: (c) => (c.engines[0].runbookRun = "runs/engine-launch-1"),
    issues: [["engines[0].runbookRun", 'found "runs/engine-launch-1"; expected an absolute path without ".." (e.g. "/srv/runbook/runs/engine-launch-20260101T000000Z-4242")']],
  },
  {
    name: "an unknown runtime kind",
    edit: (c) => (c.runtime = { kind: "podman" }),
    issues: [["runtime.kind", 'found "podman"; allowed: "native", "docker-cli" or "docker"']],
  },
  {
    name: "ucx_rdma without hcas",
    edit: (c) => (c.launch = { transport: "ucx_rdma" }),
    issues: [
      [
        "launch.rdma.hcas",
        'transport "ucx_rdma" needs RDMA HCAs and launch.rdma is not set (engines e0, e1 have no overrides.rdma); set launch.rdma.hcas (e.g. ["mlx5_0:1"]) and launch.rdma.devices, or use transport "tcp"',
      ],
    ],
  },
  {
    name: "one engine switched to ucx_rdma without hcas",
    edit: (c) => (c.engines[1].overrides = { transport: "ucx_rdma" }),
    issues: [
      [
        "engines[1].overrides.rdma.hcas",
        'engine e1 uses transport "ucx_rdma" but lists no RDMA HCAs; set overrides.rdma.hcas (e.g. ["mlx5_0:1"]) or launch.rdma.hcas, or use transport "tcp"',
      ],
    ],
  },
  {
    name: "gpuMemoryUtilization 1.5",
    edit: (c) => (c.launch = { gpuMemoryUtilization: 1.5 }),
    issues: [["launch.gpuMemoryUtilization", "found 1.5; allowed: a number greater than 0 and at most 1"]],
  },
  {
    name: "blockSize 100",
    edit: (c) => (c.launch = { blockSize: 100 }),
    issues: [["launch.blockSize", "found 100; allowed: 1, 8, 16, 32, 64, 128 or 256"]],
  },
  {
    name: "an unknown KV cache dtype",
    edit: (c) => (c.engines[0].overrides = { kvCacheDtype: "fp16" }),
    issues: [["engines[0].overrides.kvCacheDtype", 'found "fp16"; allowed: "auto", "fp8", "fp8_e4m3" or "fp8_e5m2"']],
  },

  // --- slo, router, ssh, profiling ---
  {
    name: "negative slo",
    edit: (c) => (c.slo = { ttftS: -1 }),
    issues: [["slo.ttftS", "found -1; allowed: a positive number (seconds)"]],
  },
  {
    name: "firstTokenTimeout above requestTimeout",
    edit: (c) => (c.slo = { firstTokenTimeoutS: 30, requestTimeoutS: 20 }),
    issues: [
      [
        "slo.firstTokenTimeoutS",
        "found 30, above slo.requestTimeoutS 20; the first-token deadline cannot exceed the request timeout: lower it or raise requestTimeoutS",
      ],
    ],
  },
  {
    name: "a snake_case slo key, with its camelCase suggestion",
    edit: (c) => (c.slo = { ttft_s: 5 }),
    issues: [
      [
        "slo.ttft_s",
        'unknown key; did you mean "ttftS"? allowed keys: ttftS, tpotS, firstTokenTimeoutS, requestTimeoutS, prefillTimeoutS, healthTimeoutS',
      ],
    ],
  },
  {
    name: "unknown router host",
    edit: (c) => (c.router = { host: "bb" }),
    issues: [["router.host", '"bb" is not the alias of any host; known aliases: a, b; did you mean "b"?']],
  },
  {
    name: "too many SSH sessions per host",
    edit: (c) => (c.ssh = { maxSessionsPerHost: 64 }),
    issues: [["ssh.maxSessionsPerHost", "found 64; allowed: an integer from 1 to 32"]],
  },
  {
    name: "too few prefill repeats for a median",
    edit: (c) => (c.profiling = { prefillRepeats: 2 }),
    issues: [["profiling.prefillRepeats", "found 2; allowed: an integer of at least 3"]],
  },
  {
    name: "prefill lengths that do not fit the context",
    edit: (c) => (c.launch = { maxModelLen: 1024 }),
    issues: [
      [
        "profiling.prefillLens",
        "only 2 of [256, 512, 1024, 2048, 4096, 8192, 16384] leave 1 output token within launch.maxModelLen 1024; narwhal-profile needs at least 3: add shorter lengths or raise maxModelLen",
      ],
    ],
  },
  {
    name: "a preflight schedule that is neither concurrent nor sequential",
    edit: (c) => (c.preflight = { schedule: "parallel", repeats: 0, strict: "yes" }),
    issues: [
      ["preflight.repeats", "found 0; allowed: an integer from 1 to 100"],
      ["preflight.schedule", 'found "parallel"; allowed: "concurrent" or "sequential"'],
      ["preflight.strict", 'found "yes", which is a string; expected true or false'],
    ],
  },
  {
    name: "profiling fit attempts outside 1 to 10",
    edit: (c) => (c.profiling = { fitAttempts: 0 }),
    issues: [["profiling.fitAttempts", "found 0; allowed: an integer from 1 to 10"]],
  },
  {
    name: "calibration below the runbook's 100 samples, an unknown key",
    edit: (c) => (c.calibration = { enabled: true, samplesPerGroup: 50, sample: 3 }),
    issues: [
      ["calibration.sample", "unknown key; allowed keys: enabled, samplesPerGroup, inputLengths, observationBoundS, routerOverheadS, maxFailuresPerGroup, adopt"],
      ["calibration.samplesPerGroup", "found 50; allowed: an integer of at least 100"],
    ],
  },
  {
    name: "a calibration observation bound at the deadline, input lengths past the context",
    edit: (c) => {
      c.launch = { maxModelLen: 4096 };
      c.calibration = { enabled: true, observationBoundS: 2.5, inputLengths: [128, 4095, 4096, 8000] };
    },
    issues: [
      ["calibration.observationBoundS", "found 2.5, not above slo.firstTokenTimeoutS 2.5; the observation bound must exceed the deadline being calibrated"],
      ["calibration.inputLengths", "[4096, 8000] leave no output token within launch.maxModelLen 4096; the longest admitted input is 4095"],
    ],
  },
  {
    name: "a calibration file to adopt: relative, unpinnable digest, without an enabled calibration",
    edit: (c) => (c.calibration = { adopt: { path: "runs/first-token.json", sha256: "sha256:abc" } }),
    issues: [
      ["calibration.adopt.path", 'found "runs/first-token.json"; expected an absolute path without ".." (e.g. "/srv/runbook/runs/first-token.json")'],
      ["calibration.adopt.sha256", 'found "sha256:abc"; allowed: 64 lowercase hex digits (sha256sum output)'],
    ],
  },
  {
    name: "a calibration file to adopt without an enabled calibration",
    edit: (c) => (c.calibration = { adopt: { path: "/srv/runbook/runs/first-token.json" } }),
    issues: [["calibration.adopt", "set without calibration.enabled: true; the file is only adopted (or refused and measured afresh) by an enabled calibration"]],
  },
  {
    name: "a calibration observation bound past the request timeout",
    edit: (c) => (c.calibration = { enabled: true, observationBoundS: 700 }),
    issues: [["calibration.observationBoundS", "found 700, above slo.requestTimeoutS 600; the observation bound must stay within the request timeout"]],
  },
  {
    name: "unknown top-level key",
    edit: (c) => (c.engins = []),
    issues: [["engins", `unknown key; did you mean "engines"? allowed keys: ${KNOWN_KEYS}`]],
  },
];

describe("config: invalid sections", () => rejectsEach(CASES));

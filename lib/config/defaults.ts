/**
 * Defaults in one place. `RUNBOOK_DEFAULTS` are the runbook's own (Gate A "Default serving policy",
 * Gate D first-trial budget inputs, narwhal-profile flags); the schema reads its defaults from here, so
 * docs and tests quote the same numbers the parser applies.
 */

function deepFreeze<T>(value: T): T {
  if (value && typeof value === "object") {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

export const RUNBOOK_DEFAULTS = deepFreeze({
  /** Gate A, "Default serving policy". */
  launch: {
    /** TCP on the fabric interface. */
    transport: "tcp",
    /** The model configuration's dtype, or bfloat16 when it is unspecified. */
    dtype: "model",
    kvCacheDtype: "auto",
    /** Requested cache block, tokens. */
    blockSize: 128,
    /** Eager execution. */
    enforceEager: true,
    /** Up to 16,384 tokens, capped later by the model configuration. */
    maxModelLen: 16384,
    maxNumSeqs: 8,
    gpuMemoryUtilization: 0.9,
    /** Disabled for profiling (Gate C connector policy). */
    prefixCaching: false,
    ucxTcpPortRange: "6300-6500",
    /** `kv_lease_duration` in the connector's extra config. */
    kvLeaseDurationS: 30,
  },
  /** Initial latency limits (recalibrated after profiling) and the router's deadlines. */
  slo: {
    ttftS: 10,
    tpotS: 0.125,
    firstTokenTimeoutS: 2.5,
    requestTimeoutS: 600,
    prefillTimeoutS: 120,
    healthTimeoutS: 5,
  },
  /** Gate D first-trial fabric budget inputs. */
  fabric: { promptTokens: 1024, handoffRate: 1, burst: 1, budgetS: 1, headroom: 1.25 },
  /** narwhal-profile sweep. */
  profiling: {
    prefillLens: [256, 512, 1024, 2048, 4096, 8192, 16384],
    decodeInputLens: [512, 4096, 8192],
    decodeConcurrency: [1, 4, 16, 48],
    decodeTokens: 64,
    prefillRepeats: 3,
    decodeRepeats: 1,
  },
  /** "Calibrate the first-token deadline": completed samples per directed path and input length. */
  calibration: { samplesPerGroup: 100, p99Factor: 1.2, marginS: 0.5 },
  /** Engine 1 starts in the prefill pool, the rest in decode. */
  roles: { first: "prefill", rest: "decode" },
} as const);

/**
 * Program defaults for per-engine ports: base + engine index. Distinct bases keep the three ports of
 * every engine distinct, and the index keeps engines that share a host apart.
 */
export const ENGINE_PORT_BASE = { port: 8100, attestationPort: 8200, nixlPort: 5600 } as const;

/** Service ports and deadlines the runbook leaves to the deployment. */
export const PROGRAM_DEFAULTS = {
  sshPort: 22,
  router: { bindAddress: "0.0.0.0", port: 8000, narwhalVersion: "0.7.0", installTimeoutS: 600, startTimeoutS: 120 },
  observability: {
    prometheusPort: 9090,
    grafanaPort: 3000,
    freshnessPort: 9839,
    scrapeIntervalS: 5,
    // The images the runbook's observability stack pins (Narwhal's `make observe`).
    prometheusImage: "prom/prometheus:v3.9.1",
    grafanaImage: "grafana/grafana:12.3.1",
    prometheusCommand: "prometheus",
  },
  ssh: { maxSessionsPerHost: 4, connectTimeoutS: 10, commandTimeoutS: 120 },
  /** ib_write_bw: perftest's own defaults (`-p 18515`, `-s 65536`, `-n 5000`). */
  fabric: { iperfPort: 5201, durationS: 2, rdmaPort: 18515, rdmaMessageBytes: 65536, rdmaIterations: 5000 },
  runtime: { deadlinesS: { pull: 600, start: 300, stop: 60, inspect: 30, health: 15 } },
  attestation: { startTimeoutS: 60 },
  /**
   * Calibration: the router's own overhead added to deadline + prefill in the client TTFT check, and
   * the failed attempts a group may take before the run stops to be diagnosed.
   */
  calibration: { routerOverheadS: 0.05, maxFailuresPerGroup: 20 },
  /** Gate G's trial: a request's bound, the drain's, and how a point is judged (docs/trial.md). */
  trial: { requestTimeoutS: 120, drainTimeoutS: 120, minGoodFraction: 0.9, predictionBound: 0.5 },
} as const;

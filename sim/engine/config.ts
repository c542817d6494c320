/**
 * Simulator-only settings: everything a real vLLM would learn from its hardware (GPU product and memory)
 * or that only a simulation has (time scale, latency ground truth, startup delay, reported version).
 *
 * The host harness writes this file and points NARWHAL_SIM_CONFIG at it; every field is optional.
 * NARWHAL_SIM_TIME_SCALE overrides `timeScale`, so a test can speed up one engine without rewriting the file.
 */
import { readFileSync } from "node:fs";
import { z } from "zod";
import { UCX_ENDPOINT_TIMEOUT_S } from "./nixl-runtime";

/** Ground-truth latency coefficients, in seconds of simulated time (before `timeScale`). */
export const LatencyCoefficientsSchema = z.strictObject({
  /** prefill wall time = prefillA·n² + prefillB·n + prefillC, n = input tokens */
  prefillA: z.number().nonnegative(),
  prefillB: z.number().nonnegative(),
  prefillC: z.number().nonnegative(),
  /** one decode step = decodeBase + decodeKv·(resident KV tokens) + decodeReq·(active requests) */
  decodeKv: z.number().nonnegative(),
  decodeReq: z.number().nonnegative(),
  decodeBase: z.number().nonnegative(),
});
export type LatencyCoefficients = z.output<typeof LatencyCoefficientsSchema>;

/** Narwhal's stub fleet uses these numbers; keeping them makes sim profiles comparable with its docs. */
export const DEFAULT_COEFFICIENTS: LatencyCoefficients = {
  prefillA: 2e-8,
  prefillB: 6e-5,
  prefillC: 0.005,
  decodeKv: 3e-6,
  decodeReq: 0.002,
  decodeBase: 0.012,
};

const PartialCoefficients = LatencyCoefficientsSchema.partial();

export const SimConfigSchema = z.strictObject({
  /** Multiplies every simulated sleep: 0.05 runs the engine 20x faster than the model says. */
  timeScale: z.number().positive().default(0.05),
  gpu: z
    .strictObject({
      product: z.string().min(1).default("NVIDIA H100 80GB HBM3"),
      memoryGiB: z.number().positive().default(80),
      vendor: z.enum(["nvidia", "amd"]).default("nvidia"),
      /** GPUs on the host when no *_VISIBLE_DEVICES is set (tensor parallelism must fit in them). */
      count: z.number().int().positive().default(8),
    })
    .prefault({}),
  latency: z
    .strictObject({
      default: PartialCoefficients.prefault({}),
      /** Per-engine overrides keyed by the engine's HTTP port, e.g. {"8101": {"decodeBase": 0.02}}. */
      byPort: z.record(z.string().regex(/^\d+$/, "byPort keys are HTTP port numbers"), PartialCoefficients).default({}),
    })
    .prefault({}),
  /** What GET /version and `--version` report. */
  version: z.string().min(1).default("0.29.0"),
  /** Simulated model-load time before the HTTP port accepts connections (scaled by timeScale). */
  startupDelayS: z.number().nonnegative().default(1.0),
  /**
   * false: POST /tokenize answers 404 Not Found, as an engine behind a proxy that does not forward it
   * does, so the preflight's exact input sizing (the `tokenize` gate) fails against a live engine.
   */
  tokenizeRoute: z.boolean().default(true),
  nixl: z
    .strictObject({
      /** Simulated seconds before a UCX endpoint to a gone peer fails (nixl-runtime.ts); a test's host may shorten it. */
      endpointTimeoutS: z.number().nonnegative().default(UCX_ENDPOINT_TIMEOUT_S),
      /** A folder of the host's own Python distributions, searched for NIXL before sim/python (a host that declares its own release). */
      site: z.string().min(1).optional(),
    })
    .prefault({}),
});

/** The parsed file, defaults filled in. */
export type SimConfig = z.output<typeof SimConfigSchema>;
/** What a writer of the file (the host harness) may put in it. */
export type SimConfigInput = z.input<typeof SimConfigSchema>;

export class SimConfigError extends Error {
  readonly code = "SIM_CONFIG_INVALID";
}

/** Reads NARWHAL_SIM_CONFIG (if set) and NARWHAL_SIM_TIME_SCALE; throws SimConfigError naming the key. */
export function loadSimConfig(env: NodeJS.ProcessEnv = process.env): SimConfig {
  const path = env.NARWHAL_SIM_CONFIG;
  let raw: unknown = {};
  if (path) {
    let text: string;
    try {
      text = readFileSync(path, "utf8");
    } catch (err) {
      throw new SimConfigError(`NARWHAL_SIM_CONFIG=${path}: cannot read the file (${(err as Error).message})`);
    }
    try {
      raw = JSON.parse(text);
    } catch (err) {
      throw new SimConfigError(`NARWHAL_SIM_CONFIG=${path}: not JSON (${(err as Error).message})`);
    }
  }
  const parsed = SimConfigSchema.safeParse(raw);
  if (!parsed.success) {
    throw new SimConfigError(`NARWHAL_SIM_CONFIG=${path ?? "(unset)"} is invalid:\n${z.prettifyError(parsed.error)}`);
  }
  const config = parsed.data;
  const override = env.NARWHAL_SIM_TIME_SCALE;
  if (override !== undefined && override !== "") {
    const scale = Number(override);
    if (!Number.isFinite(scale) || scale <= 0) {
      throw new SimConfigError(`NARWHAL_SIM_TIME_SCALE=${override}: expected a positive number such as 0.05`);
    }
    config.timeScale = scale;
  }
  return config;
}

/** The coefficients one engine uses: byPort[port] over latency.default over the built-in defaults. */
export function coefficientsFor(config: SimConfig, port: number): LatencyCoefficients {
  return { ...DEFAULT_COEFFICIENTS, ...config.latency.default, ...(config.latency.byPort[String(port)] ?? {}) };
}

/**
 * NARWHAL_SIM_CONTROL_PORT: the port of the simulator's control server (control.ts), bound on the
 * engine's `--host` address; unset or empty means none. Per engine, so it is an environment variable
 * (the test harness sets it for each engine it starts), not a key of the per-host file.
 */
export function controlPort(env: NodeJS.ProcessEnv = process.env): number | null {
  const raw = env.NARWHAL_SIM_CONTROL_PORT;
  if (raw === undefined || raw === "") return null;
  const port = Number(raw);
  if (!/^\d+$/.test(raw) || port < 1 || port > 65535) {
    throw new SimConfigError(`NARWHAL_SIM_CONTROL_PORT=${raw}: expected a TCP port number (1-65535)`);
  }
  return port;
}

/**
 * The simulated fleet's shape: which hosts exist, their addresses, GPU layouts, engine latency
 * coefficients, and which one accepts password logins.
 *
 * Defaults (3 hosts): sim1 and sim2 with 2x "NVIDIA H100 80GB HBM3", sim3 with 2x "AMD Instinct MI300X".
 * More hosts (`sim up --hosts 4`) get the NVIDIA layout. A layout is written `<model>:<count>`
 * (`h100:2`, `mi300x:4`) or `none` (a host that exposes no GPU at all).
 *
 * Overrides, strongest first: explicit options (CLI flags / `simUp` arguments), then a JSON file named
 * by NARWHAL_SIM_TOPOLOGY or `--topology`, else <root>/.sim/topology.json when it exists:
 *   { "hosts": 4, "layouts": { "sim4": "none" }, "passwordAuth": ["sim2"],
 *     "latency": { "sim1": { "decodeBase": 0.02 } }, "startupDelayS": 0.5, "dockerHosts": ["simdock"],
 *     "rdma": { "sim40": ["mlx5_0"] } }
 *
 * `rdma` gives a host an RDMA HCA: a RoCE function on its fabric interface, shown under
 * /sys/class/infiniband with GIDs derived from its address, and perftest's `ib_write_bw` (a stand-in)
 * on its PATH (sim/rdma/). A host has one fabric interface, so it has at most one HCA.
 *
 * Docker hosts (`dockerHosts`) are named hosts beside the numbered ones, each running its own Docker
 * Engine inside its namespaces (sim/hosts/docker.ts), so containers started there with `--network host`
 * bind the host's fabric address and see its mounts and device nodes, as on a real GPU host.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { z } from "zod";
import { HOST_ADDRESS_OFFSET, MAX_HOSTS, SIM_DIR, SUBNET_PREFIX } from "./hosts/constants";
import { LatencyCoefficientsSchema, type LatencyCoefficients as EngineLatencyCoefficients } from "./engine/config";
import { releaseOf } from "./engine/nixl-runtime";

export type GpuVendor = "nvidia" | "amd";

/** One GPU product the harness knows how to fake. */
export interface GpuModel {
  readonly key: string;
  readonly vendor: GpuVendor;
  /** The name the vendor tool prints (nvidia-smi `name`, rocminfo `Marketing Name`). */
  readonly product: string;
  readonly memoryMiB: number;
  readonly memoryGiB: number;
  readonly pciVendor: string;
  readonly pciDevice: string;
  /** PCI class as sysfs prints it: 0x030200 (3D controller) for NVIDIA, 0x038000 (display) for AMD. */
  readonly pciClass: string;
  /** CUDA compute capability (NVIDIA) or gfx target (AMD). */
  readonly arch: string;
}

export const GPU_MODELS: Readonly<Record<string, GpuModel>> = {
  h100: {
    key: "h100",
    vendor: "nvidia",
    product: "NVIDIA H100 80GB HBM3",
    memoryMiB: 81559,
    memoryGiB: 80,
    pciVendor: "0x10de",
    pciDevice: "0x2330",
    pciClass: "0x030200",
    arch: "9.0",
  },
  mi300x: {
    key: "mi300x",
    vendor: "amd",
    product: "AMD Instinct MI300X",
    memoryMiB: 196592,
    memoryGiB: 192,
    pciVendor: "0x1002",
    pciDevice: "0x74a1",
    pciClass: "0x038000",
    arch: "gfx942",
  },
};

/** A host's accelerators: `count` GPUs of one model, or none. */
export interface GpuLayout {
  /** As written: `h100:2`, `mi300x:2`, `none`. */
  readonly name: string;
  readonly model: GpuModel | null;
  readonly count: number;
}

/** Latency model of the engine simulator, in seconds: the simulator's own schema is the one definition. */
export type LatencyCoefficients = Readonly<EngineLatencyCoefficients>;

/** The stub fleet's coefficients (reference/narwhal-contract.md §5), plus a per-request decode slope. */
export const BASE_LATENCY: LatencyCoefficients = {
  prefillA: 2e-8,
  prefillB: 6e-5,
  prefillC: 0.005,
  decodeKv: 3e-6,
  decodeReq: 0.002,
  decodeBase: 0.012,
};

export interface HostSpec {
  readonly alias: string;
  /** 1-based; the address is 198.18.0.(10+index). */
  readonly index: number;
  readonly address: string;
  readonly layout: GpuLayout;
  /** Also accept password logins (user `narwhal`); every host accepts the harness key. */
  readonly passwordAuth: boolean;
  readonly latency: LatencyCoefficients;
  readonly startupDelayS: number;
  /** Runs its own Docker Engine (a `dockerHosts` entry); absent on the numbered hosts. */
  readonly dockerEngine?: boolean;
  /** Its RDMA HCA's name (`rdma`), e.g. ["mlx5_0"]; absent on hosts without one. */
  readonly rdma?: readonly string[];
  /**
   * The NIXL release its vLLM environment carries (`nixl`), e.g. "1.5.0": the version the image check
   * reads and the one the engines' crash rule follows. Absent: sim/python's (0.7.1), as every host had.
   */
  readonly nixl?: string;
}

export interface Topology {
  readonly hosts: readonly HostSpec[];
}

export const DEFAULT_HOST_COUNT = 3;
export const DEFAULT_PASSWORD_HOSTS: readonly string[] = ["sim2"];
export const DEFAULT_STARTUP_DELAY_S = 0.5;
export const TOPOLOGY_ENV = "NARWHAL_SIM_TOPOLOGY";

export const aliasOf = (index: number): string => `sim${index}`;

/**
 * The docker hosts and their indices. Indices above MAX_HOSTS keep their addresses (198.18.0.251 for
 * simdock) and MACs clear of every numbered host's.
 */
export const DOCKER_HOSTS: Readonly<Record<string, number>> = { simdock: MAX_HOSTS + 1 };
export const DEFAULT_DOCKER_HOST_LAYOUT = "h100:2";
export const addressOf = (index: number): string => `${SUBNET_PREFIX}.${HOST_ADDRESS_OFFSET + index}`;

/** Default layout by host index: sim3 is AMD, every other host NVIDIA. */
export function defaultLayoutName(index: number): string {
  return index === 3 ? "mi300x:2" : "h100:2";
}

/** Parses `h100:2`, `mi300x:4`, `none`; the error names the allowed forms. */
export function parseLayout(name: string): GpuLayout {
  const trimmed = name.trim().toLowerCase();
  if (trimmed === "none") return { name: "none", model: null, count: 0 };
  const m = /^([a-z0-9]+):([1-8])$/.exec(trimmed);
  const model = m ? GPU_MODELS[m[1]] : undefined;
  if (!m || !model) {
    throw new Error(
      `invalid GPU layout "${name}": use <model>:<count> with model one of ${Object.keys(GPU_MODELS).join(", ")} ` +
        `and count 1-8 (e.g. h100:2), or "none"`,
    );
  }
  return { name: `${model.key}:${m[2]}`, model, count: Number(m[2]) };
}

/**
 * Each host's coefficients differ slightly (about 7% per host index) so a profile measured on one
 * host is distinguishable from another's, and each can be checked against its own ground truth.
 */
export function defaultLatency(index: number): LatencyCoefficients {
  const f = 1 + 0.07 * (index - 1);
  const round = (x: number) => Number(x.toPrecision(4));
  return {
    prefillA: round(BASE_LATENCY.prefillA * f),
    prefillB: round(BASE_LATENCY.prefillB * f),
    prefillC: round(BASE_LATENCY.prefillC * f),
    decodeKv: round(BASE_LATENCY.decodeKv * f),
    decodeReq: round(BASE_LATENCY.decodeReq * f),
    decodeBase: round(BASE_LATENCY.decodeBase * f),
  };
}

/** A NIXL release a host may declare: one the engines' crash rule can read (nixl-runtime.ts) and a dist-info folder can be named after. */
const isNixlRelease = (v: string): boolean => releaseOf(v) !== null && !/\s/.test(v);

const latencyOverride = z.object(LatencyCoefficientsSchema.shape).partial()
  .strict();

export const topologyOverrideSchema = z
  .object({
    hosts: z.number().int().min(1).max(MAX_HOSTS).optional(),
    layouts: z.record(z.string(), z.string()).optional(),
    passwordAuth: z.array(z.string()).optional(),
    latency: z.record(z.string(), latencyOverride).optional(),
    startupDelayS: z.number().nonnegative().optional(),
    dockerHosts: z.array(z.string()).optional(),
    rdma: z
      .record(z.string(), z.array(z.string().regex(/^[A-Za-z0-9_.-]+$/, "an HCA name such as mlx5_0")).max(1, "one HCA per host: a simulated host has one fabric interface"))
      .optional(),
    nixl: z.record(z.string(), z.string().refine(isNixlRelease, "a NIXL release such as 1.5.0")).optional(),
  })
  .strict();
export type TopologyOverride = z.infer<typeof topologyOverrideSchema>;

/** Reads an override file; the error names the file and every bad key. */
export function readTopologyOverride(file: string): TopologyOverride {
  const parsed = topologyOverrideSchema.safeParse(JSON.parse(fs.readFileSync(file, "utf8")));
  if (!parsed.success) throw new Error(`invalid topology override ${file}:\n${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

/** The override file in effect: explicit path (null: none), then $NARWHAL_SIM_TOPOLOGY, then .sim/topology.json. */
export function overrideFilePath(explicit?: string | null): string | undefined {
  if (explicit === null) return undefined;
  if (explicit) return explicit;
  if (process.env[TOPOLOGY_ENV]) return process.env[TOPOLOGY_ENV];
  const local = path.join(SIM_DIR, "topology.json");
  return fs.existsSync(local) ? local : undefined;
}

export interface TopologyOptions extends TopologyOverride {
  /** Override file to read; null reads none; see overrideFilePath for the default. */
  topologyFile?: string | null;
}

/** Builds the topology from defaults, the override file and explicit options. */
export function buildTopology(opts: TopologyOptions = {}): Topology {
  const file = overrideFilePath(opts.topologyFile);
  const fromFile: TopologyOverride = file ? readTopologyOverride(file) : {};
  const count = opts.hosts ?? fromFile.hosts ?? DEFAULT_HOST_COUNT;
  if (!Number.isInteger(count) || count < 1 || count > MAX_HOSTS) {
    throw new Error(`invalid host count ${count}: use an integer from 1 to ${MAX_HOSTS}`);
  }
  const layouts = { ...fromFile.layouts, ...opts.layouts };
  const passwordHosts = opts.passwordAuth ?? fromFile.passwordAuth ?? DEFAULT_PASSWORD_HOSTS;
  const latency = { ...fromFile.latency, ...opts.latency };
  const startupDelayS = opts.startupDelayS ?? fromFile.startupDelayS ?? DEFAULT_STARTUP_DELAY_S;

  const rdma = { ...fromFile.rdma, ...opts.rdma };
  const nixl = { ...fromFile.nixl, ...opts.nixl };
  const dockerHosts = opts.dockerHosts ?? fromFile.dockerHosts ?? [];
  const unknownDocker = dockerHosts.filter((a) => DOCKER_HOSTS[a] === undefined);
  if (unknownDocker.length > 0) {
    throw new Error(`dockerHosts names ${unknownDocker.join(", ")}; the docker hosts are ${Object.keys(DOCKER_HOSTS).join(", ")}`);
  }

  const hosts: HostSpec[] = [];
  for (let index = 1; index <= count; index++) {
    const alias = aliasOf(index);
    hosts.push({
      alias,
      index,
      address: addressOf(index),
      layout: parseLayout(layouts[alias] ?? defaultLayoutName(index)),
      passwordAuth: passwordHosts.includes(alias),
      latency: { ...defaultLatency(index), ...latency[alias] },
      startupDelayS,
      ...(rdma[alias]?.length ? { rdma: rdma[alias] } : {}),
      ...(nixl[alias] ? { nixl: nixl[alias] } : {}),
    });
  }
  for (const alias of [...new Set(dockerHosts)]) {
    const index = DOCKER_HOSTS[alias];
    hosts.push({
      alias,
      index,
      address: addressOf(index),
      layout: parseLayout(layouts[alias] ?? DEFAULT_DOCKER_HOST_LAYOUT),
      passwordAuth: passwordHosts.includes(alias),
      // Engines here run in containers from the simulator image, which reads no host sim config.
      latency: { ...BASE_LATENCY, ...latency[alias] },
      startupDelayS,
      dockerEngine: true,
      ...(rdma[alias]?.length ? { rdma: rdma[alias] } : {}),
    });
  }
  const badHca = Object.entries(rdma).filter(([, names]) => names.length > 1 || names.some((n) => !/^[A-Za-z0-9_.-]+$/.test(n)));
  if (badHca.length > 0) {
    throw new Error(`rdma for ${badHca.map(([a, n]) => `${a} (${JSON.stringify(n)})`).join(", ")}: give each host at most one HCA name such as "mlx5_0" (a simulated host has one fabric interface)`);
  }
  const unknownRdma = Object.keys(rdma).filter((a) => !hosts.some((h) => h.alias === a));
  if (unknownRdma.length > 0) {
    throw new Error(`rdma given for ${unknownRdma.join(", ")}, but the fleet has hosts sim1..sim${count}${dockerHosts.length ? ` and ${dockerHosts.join(", ")}` : ""}; raise --hosts`);
  }
  const badNixl = Object.entries(nixl).filter(([, v]) => !isNixlRelease(v));
  if (badNixl.length > 0) {
    throw new Error(`nixl for ${badNixl.map(([a, v]) => `${a} (${JSON.stringify(v)})`).join(", ")}: give a NIXL release such as "1.5.0"`);
  }
  const dockerNixl = Object.keys(nixl).filter((a) => DOCKER_HOSTS[a] !== undefined);
  if (dockerNixl.length > 0) {
    throw new Error(`nixl given for ${dockerNixl.join(", ")}: a docker host's engines run the simulator image, whose NIXL is the image's (sim/image); give nixl to numbered hosts only`);
  }
  const unknownNixl = Object.keys(nixl).filter((a) => !hosts.some((h) => h.alias === a));
  if (unknownNixl.length > 0) {
    throw new Error(`nixl given for ${unknownNixl.join(", ")}, but the fleet has hosts sim1..sim${count}; raise --hosts`);
  }
  const unknown = Object.keys(layouts).filter((a) => !hosts.some((h) => h.alias === a));
  if (unknown.length > 0) {
    throw new Error(`layout given for ${unknown.join(", ")}, but the fleet has hosts sim1..sim${count}${dockerHosts.length ? ` and ${dockerHosts.join(", ")}` : ""}; raise --hosts`);
  }
  return { hosts };
}

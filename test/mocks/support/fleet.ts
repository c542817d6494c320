/**
 * What the Fleet mock tests share: the recorded registrations, the two-host three-engine fleet they
 * build, and the state a real provider would return for each resource type, so every plan, attestation
 * and profile downstream resolves without any provider method running.
 */
import * as pulumi from "@pulumi/pulumi";
import { parseFleetConfig } from "../../../lib/config/parse";
import { cacheLayoutDigest } from "../../../lib/engine/cache-layout";
import type { AttestationDocument } from "../../../lib/attestation/document";
import type { FleetSecrets } from "../../../components/fleet-inputs";
import { readLocalFiles } from "../../../entry/local-files";
import { ranks } from "../../unit/attestation/fixtures";

/** Resource shape only: under mocks no provider method runs, so this says what is registered, not what happens. */
export interface Registered {
  type: string;
  name: string;
  inputs: Record<string, unknown>;
  provider?: string;
  /** The parent's URN ("" at the top), as the engine receives it. */
  parent?: string;
  /** Each alias as the URN the engine looks up in the stack's state. */
  aliases?: string[];
  /** The URNs the engine waits for before this resource's step: `dependsOn` and the inputs' resources. */
  dependencies?: string[];
}

/** The parts of the engine's RegisterResourceRequest (and its Alias messages) the mocks read. */
interface AliasSpecMessage {
  getName(): string;
  getType(): string;
  getStack(): string;
  getProject(): string;
  getParenturn(): string;
  getNoparent(): boolean;
}
interface RegisterRequest {
  getType(): string;
  getName(): string;
  getParent(): string;
  getAliasesList(): Array<{ getUrn(): string; hasSpec(): boolean; getSpec(): AliasSpecMessage }>;
  getDependenciesList(): string[];
}

/**
 * The URN an alias names, resolved as the engine resolves it: blank parts are the resource's own, the
 * parent's type chain (never the root stack's) prefixes the type.
 */
function aliasUrn(req: RegisterRequest, alias: ReturnType<RegisterRequest["getAliasesList"]>[number]): string {
  if (!alias.hasSpec()) return alias.getUrn();
  const spec = alias.getSpec();
  const parent = spec.getNoparent() ? "" : spec.getParenturn() || req.getParent();
  const chain = parent ? parent.split("::")[2] : "";
  const type = spec.getType() || req.getType();
  const qualified = chain && chain !== "pulumi:pulumi:Stack" ? `${chain}$${type}` : type;
  return `urn:pulumi:${spec.getStack() || pulumi.getStack()}::${spec.getProject() || pulumi.getProject()}::${qualified}::${spec.getName() || req.getName()}`;
}

/**
 * Mocks see no parents, aliases or dependencies: read them from the request the SDK sends the (mock) engine, before
 * the mock's newResource, which the request's registration calls, records the resource.
 */
function recordPlacement(placements: Map<string, Pick<Registered, "parent" | "aliases" | "dependencies">>): void {
  const monitor = pulumi.runtime.getMonitor() as unknown as { registerResource(req: RegisterRequest, callback: unknown): Promise<void> };
  const register = monitor.registerResource.bind(monitor);
  monitor.registerResource = (req, callback) => {
    placements.set(`${req.getType()}::${req.getName()}`, { parent: req.getParent(), aliases: req.getAliasesList().map((a) => aliasUrn(req, a)), dependencies: req.getDependenciesList() });
    return register(req, callback);
  };
}

export const IMAGE_ID = "sha256:" + "1d".repeat(32);
export const CONTAINER_ID = "c0".repeat(32);
export const MOCK_HOST_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMockKey";

/** Mocks see secrets in their wire form; unwrap them to compare values. */
export function reveal(value: unknown): unknown {
  const v = value as Record<string, unknown> | undefined;
  return v && v["4dabf18193072939515e22adb298388d"] === "1b47061264138c4ac30d75fd1eb44270" ? v.value : value;
}

/** The output's value, or its failure (an apply that throws rejects it). */
export function settle<T>(o: pulumi.Output<T>): Promise<T> {
  return (o as unknown as { promise(): Promise<T> }).promise();
}

/** Hosts a (root, port 22) and b (ops, port 2222); e1 and e3 on a, e2 on b; `over` replaces or adds sections. */
export function fleetConfig(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    hosts: [
      { alias: "a", destination: "root@198.18.0.11", fabricInterface: "fab0" },
      { alias: "b", destination: "ops@198.18.0.12", port: 2222, fabricInterface: "fab0" },
    ],
    engines: [
      { id: "e1", host: "a", gpuIds: [0] },
      { id: "e2", host: "b", gpuIds: [0] },
      { id: "e3", host: "a", gpuIds: [1] },
    ],
    model: { servedName: "tiny", checkpointDir: "/models/tiny" },
    ...over,
  };
}

/** Native engines, the router on b, and a sweep short enough to read: what the profile mesh and preflight need. */
export const PROFILED = {
  runtime: { kind: "native" },
  router: { host: "b" },
  profiling: { prefillLens: [256, 1024, 4096], decodeInputLens: [512, 4096], decodeConcurrency: [1, 4, 16] },
};

export function mockSecrets(apiKey: string, sshKey = "k"): FleetSecrets {
  return { engineApiKey: pulumi.secret(apiKey), sshPrivateKey: () => pulumi.secret(sshKey), sshPassword: () => undefined, grafanaAdminPassword: pulumi.secret("grafana-mock-pass") };
}

/** What every mocked discovery finds on host `alias`: its pinned key, fabric address, two GPUs and the checkpoint. */
export function hostFacts(alias: unknown): Record<string, unknown> {
  return {
    hostKey: MOCK_HOST_KEY,
    fabricAddress: `198.18.0.${alias === "a" ? 11 : 12}`,
    accelerators: { vendor: "nvidia", product: "NVIDIA H100 80GB HBM3", gpus: [{ index: 0 }, { index: 1 }] },
    checkpoint: { modelTreeSha256: "ab".repeat(32), files: [{ path: "config.json", size: 10, sha256: "cd".repeat(32) }] },
  };
}

/** What every engine's image check read, as its digest names it. */
export const CHECK_DIGEST = "sha256:" + "ce".repeat(32);
const VLLM_V1 = "/opt/vllm/lib/python3.12/site-packages/vllm/distributed/kv_transfer/kv_connector/v1";

/** The state each provider would record, consistent enough for the whole mesh (attestation, profiles, preflight). */
export function fleetState(type: string, name: string, inputs: Record<string, any>): Record<string, unknown> {
  switch (type) {
    case "pulumi-nodejs:dynamic/narwhal:HostDiscovery":
      return {
        ...inputs,
        ...hostFacts(inputs.alias),
        model: { architecture: "LlamaForCausalLM", numHiddenLayers: 22, configSha256: "c0".repeat(32), dtype: "bfloat16", maxPositionEmbeddings: 32768, trustRemoteCode: false, ssmConvStateLayoutDS: false },
        runtime: { kind: "native", vllmVersion: "0.29.0", packages: { nixl: "0.7.1" } },
        factsDigest: "sha256:" + "fa".repeat(32),
      };
    case "command:remote:Command":
      return {
        ...inputs,
        stdout: name.endsWith("-sidecar") ? '{"pid":77,"startedAt":"2026-01-01T00:00:01Z"}' : `{"pid":42,"containerId":"${CONTAINER_ID}","startedAt":"2026-01-01T00:00:00Z"}`,
      };
    case "pulumi-nodejs:dynamic/narwhal:ImageCheck":
      return {
        ...inputs,
        vllmApiVersion: "0.29.0",
        checkDigest: CHECK_DIGEST,
        findings: { vllmApiVersion: "0.29.0", nixl: { connectorVersion: 9, connectorSource: `${VLLM_V1}/nixl/metadata.py`, version: "0.7.1", distribution: "nixl" } },
        identity: inputs.runtime.kind === "docker" ? { kind: "docker", image: inputs.runtime.image, imageId: IMAGE_ID, resolvedDigest: null } : { kind: "native", command: "vllm" },
      };
    case "pulumi-nodejs:dynamic/narwhal:Liveness":
      return { ...inputs, epoch: `epoch-${inputs.name}` };
    case "pulumi-nodejs:dynamic/narwhal:EngineGeneration":
      return { ...inputs, generationDigest: "sha256:" + Buffer.from(String(inputs.engineId).padEnd(32, ".")).toString("hex"), processStartTime: 1754000000.25, version: "0.29.0" };
    case "pulumi-nodejs:dynamic/narwhal:CacheCapture": {
      const rs = ranks(inputs.expected.dtype, 1);
      const layout = { tensorParallelSize: 1, ranks: rs, bytesPerTokenAllRanks: rs.reduce((n, r) => n + r.bytesPerToken, 0), source: "engine-log", cacheConfig: {}, nixl: null };
      return { ...inputs, layout, cacheLayoutDigest: cacheLayoutDigest(layout) };
    }
    case "pulumi-nodejs:dynamic/narwhal:Attestation": {
      const doc = inputs.document as AttestationDocument;
      return { ...inputs, contract: doc.contract, attestationDigest: "sha256:" + "a7".repeat(32), launchDigest: "sha256:" + "1a".repeat(32), contractFingerprint: "0123456789abcdef" };
    }
    case "pulumi-nodejs:dynamic/narwhal:FabricEdge":
      return { ...inputs, measurement: { gbps: 30, retransmits: 0 }, verdict: "met", verdictReason: "30 Gbit/s meets the budget", evidence: { relativePath: "fabric-edge/x.json", digest: "sha256:" + "fe".repeat(32) } };
    case "pulumi-nodejs:dynamic/narwhal:Profile": {
      const row = { iid: inputs.engineId, ttft_a: 2e-8, ttft_b: 6e-5, ttft_c: 0.005, tpot_slope: 3e-6, tpot_intercept: 0.012, generation_digest: inputs.launchDigest ?? inputs.attestationDigest };
      return {
        ...inputs,
        row,
        profileDigest: "sha256:" + Buffer.from(String(inputs.engineId).padEnd(32, "p")).toString("hex"),
        bindingDigest: row.generation_digest,
        fitErrors: { prefillMape: 0.01, prefillWorstPoint: 0.02, decodeFitMape: 0.01, decodeCvMape: 0.02 },
        samples: { relativePath: `profile/artifacts/${"5a".repeat(32)}`, sha256: "sha256:" + "5a".repeat(32) },
      };
    }
    case "pulumi-nodejs:dynamic/narwhal:Preflight":
      return { ...inputs, fleetDocumentDigest: "sha256:" + "f1".repeat(32), gates: [{ gate: "reach", verdict: "pass", lines: [{ status: "ok", message: "e1 /health" }] }], transfers: [], rounds: 4, ranAt: "2026-01-01T00:00:00Z", wallSeconds: 1 };
    case "pulumi-nodejs:dynamic/narwhal:Calibration":
      return { ...inputs, fleetDocumentDigest: "sha256:" + "f1".repeat(32), paths: [], groups: [], floorS: 3.04, deadlineS: 3.1, currentDeadlineS: 2.5, sampledUnderBoundS: 10, prefillS: 1, clientTtftS: 4.15, clientTtftRequirementS: 10, fitsClientTtft: true, samples: 2400, failedAttempts: 0, identities: [], ranAt: "2026-01-01T00:00:00Z", wallSeconds: 1 };
    case "pulumi-nodejs:dynamic/narwhal:ProfileStore":
      return { ...inputs, storeDigest: "sha256:" + "57".repeat(32), samplesPath: String(inputs.path).replace(/\.json$/, ".samples.json"), samplesDigest: "sha256:" + "5d".repeat(32), count: 3 };
    default:
      return inputs;
  }
}

type StateOf = (type: string, name: string, inputs: Record<string, any>) => Record<string, unknown>;

/**
 * Records every registration (with its parent and aliases) into `registered` and answers with `state`; a @pulumi/docker container is
 * known by its id, as the docker backend reads it. Resolves to the Fleet class, loaded only once the
 * mocks are in place.
 */
export async function mockFleet(registered: Registered[], state: StateOf = fleetState): Promise<typeof import("../../../components/fleet").Fleet> {
  const placements = new Map<string, Pick<Registered, "parent" | "aliases" | "dependencies">>();
  await pulumi.runtime.setMocks(
    {
      newResource(args) {
        registered.push({ type: args.type, name: args.name, inputs: args.inputs, ...placements.get(`${args.type}::${args.name}`) });
        const id = args.type === "docker:index/container:Container" ? CONTAINER_ID : `${args.name}-id`;
        return { id, state: state(args.type, args.name, args.inputs) };
      },
      call(args) {
        throw new Error(`unexpected call to ${args.token}`);
      },
    },
    "narwhal-fleet",
    "mock",
    false,
  );
  recordPlacement(placements);
  return (await import("../../../components/fleet")).Fleet;
}

type FleetClass = Awaited<ReturnType<typeof mockFleet>>;

/**
 * Inside a describe: mocks set (and the Fleet class loaded) before its tests, the record cleared before
 * each. `build` makes the component "fleet" of stack "mock" from a raw config, reading the local files
 * it names first, as the program's entry does.
 */
export function useFleetMocks(state: StateOf = fleetState) {
  const registered: Registered[] = [];
  let Fleet: FleetClass | undefined;
  before(async () => {
    Fleet = await mockFleet(registered, state);
  });
  beforeEach(() => registered.splice(0));
  const build = (config: Record<string, unknown>, secrets: FleetSecrets): InstanceType<FleetClass> => {
    const spec = parseFleetConfig(config);
    // The docker backend's known_hosts writes are checked in runtime-backends.test.ts; here they are not
    // made, so a docker fleet leaves the working directory's runs/ alone.
    return new Fleet!("fleet", { spec, secrets, localFiles: readLocalFiles(spec, secrets, undefined), knownHosts: { dir: "/fixture/known-hosts", write: () => undefined }, stack: "mock" });
  };
  return { registered, build };
}

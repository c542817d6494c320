/**
 * Discovery's one probe per login: the command line that runs lib/discovery/probe-script.ts on a host,
 * and the parser that turns its labelled sections into typed host facts, naming host and section in every error.
 */
import { createHash, randomBytes } from "node:crypto";
import { shq } from "../shell";
import { AcceleratorInventory, inventoryFrom } from "./accelerators";
import { DeviceCheck, deviceCheck, devicePathProblem, parseDeviceSection } from "./devices";
import { amdDevicePaths, missingRenderNodes, pickDevicePaths } from "./drm";
import { chooseFabricAddress, parseGlobalAddresses } from "./fabric-address";
import { busyPlannedPorts, Listener, parseListeners, PlannedPort, PortConflict } from "./listeners";
import { ModelConfigError, modelRequirements, ModelRequirements, parseModelFileSection } from "./model";
import { readRdmaSections, type RdmaInventory, type RdmaPortRequest } from "./rdma";
import { PROBE_SCRIPT, splitSections, type ProbeSections } from "./probe-script";
import {
  DockerRuntimeIdentity,
  dockerRuntimeIdentity,
  NativeRuntimeIdentity,
  packagesOfInterest,
  parseImageInspect,
  parsePackageList,
  parseVllmVersion,
  RuntimeIdentity,
  RuntimePackages,
  ScriptKind,
} from "./runtime";



// ---------- the whole probe: one command line, one typed result ----------

/** Which runtime's identity to read: the vllm command on the host, or the engine image. */
export type RuntimeProbeSpec =
  | { readonly kind: "native"; readonly vllmCommand?: string }
  | { readonly kind: "docker"; readonly image: string; readonly dockerCommand?: string };

export interface ProbeOptions {
  /** The host's alias: every error names it. */
  readonly alias: string;
  readonly fabricInterface: string;
  /** The operator's choice when the interface has several global addresses. */
  readonly fabricAddressChoice?: string;
  /** Checkpoint directory (model.checkpointDir); no model sections when absent. */
  readonly modelDir?: string;
  /** Bound on each checkpoint metadata file read (default 4 MiB). */
  readonly maxFileBytes?: number;
  /** Declared accelerator and transfer device paths. */
  readonly devicePaths?: ReadonlyArray<string>;
  readonly runtime?: RuntimeProbeSpec;
  /** Ports the host's engines will listen on; busy ones become `portConflicts`. */
  readonly plannedPorts?: ReadonlyArray<PlannedPort>;
  /** Listeners owned only by these pids are not conflicts (e.g. the engine re-checked after start). */
  readonly ignorePids?: ReadonlyArray<number>;
  /** Name of the package-reading container; a fresh random one by default. */
  readonly probeContainerName?: string;
  /** HCA ports this host's engines use (`rdma.hcas`): each must be ACTIVE and hold its GID index. */
  readonly rdmaPorts?: ReadonlyArray<RdmaPortRequest>;
}

export const DEFAULT_MAX_FILE_BYTES = 4 * 1024 * 1024;

export interface ProbeCommand {
  /** One shell command line; every value in it went through `shq`. */
  readonly command: string;
  /** The script, sent on stdin. */
  readonly stdin: string;
  /** A deadline covering every bounded step of the script. */
  readonly timeoutS: number;
}

/** The command line and stdin that run the whole probe in one login. */
export function probeCommand(opts: ProbeOptions): ProbeCommand {
  const problems: string[] = [];
  const devices = opts.devicePaths ?? [];
  for (const d of devices) {
    const p = devicePathProblem(d);
    if (p) problems.push(p);
  }
  const ref = opts.runtime ? (opts.runtime.kind === "native" ? (opts.runtime.vllmCommand ?? "vllm") : opts.runtime.image) : "";
  const tool = opts.runtime?.kind === "docker" ? (opts.runtime.dockerCommand ?? "docker") : "docker";
  for (const [what, value] of [
    ["runtime reference", ref],
    ["docker command", tool],
    ["fabric interface", opts.fabricInterface],
  ] as const) {
    if (value.startsWith("-")) problems.push(`${what} ${JSON.stringify(value)} starts with "-"`);
    if (/[\n\r]/.test(value)) problems.push(`${what} ${JSON.stringify(value)} contains a newline`);
  }
  if (opts.runtime && ref.trim() === "") problems.push(`runtime ${opts.runtime.kind} needs ${opts.runtime.kind === "native" ? "a vllm command" : "an image"}`);
  const name = opts.probeContainerName ?? `narwhal-probe-${randomBytes(6).toString("hex")}`;
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(name)) problems.push(`container name ${JSON.stringify(name)} is not a valid docker name`);
  const max = opts.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES;
  if (!Number.isInteger(max) || max <= 0) problems.push(`maxFileBytes ${max} is not a positive integer`);
  if (problems.length > 0) throw new Error(`host ${opts.alias}: cannot build the discovery probe: ${problems.join("; ")}`);

  const args = [opts.fabricInterface, opts.modelDir ?? "", max, opts.runtime?.kind ?? "none", ref, tool, name, ...devices];
  const runtimeS = opts.runtime?.kind === "native" ? 300 : opts.runtime?.kind === "docker" ? 420 : 0;
  return { command: `sh -s -- ${args.map(shq).join(" ")}`, stdin: PROBE_SCRIPT, timeoutS: 90 + runtimeS };
}

/** A section that could not be read, named by host and section. */
export interface ProbeSectionError {
  readonly host: string;
  readonly section: string;
  /** "host sim2, probe section model_config: /models/x/config.json is missing; ..." */
  readonly message: string;
}

export interface ModelFacts {
  readonly dir: string;
  readonly requirements: ModelRequirements;
  /** generation_config.json as parsed, or null when the checkpoint has none. */
  readonly generationConfig: Readonly<Record<string, unknown>> | null;
  /** sha256 (hex) of tokenizer_config.json's bytes, or null when absent. */
  readonly tokenizerConfigSha256: string | null;
  /** Separate chat template files beside the config (chat_template.jinja, chat_template.json). */
  readonly chatTemplateFiles: ReadonlyArray<string>;
}

/** Everything one probe login learns about a host (Gate A discovery and the Gate C inspection). */
export interface HostFacts {
  readonly alias: string;
  readonly hostname: string;
  readonly accelerators: AcceleratorInventory;
  readonly fabric: { readonly interface: string; readonly addresses: ReadonlyArray<string>; readonly address: string | null };
  /** null when no checkpoint dir was asked for or its config.json could not be used (see errors). */
  readonly model: ModelFacts | null;
  /** null when `ss` failed (see errors). */
  readonly listeners: ReadonlyArray<Listener> | null;
  /** Planned ports already held by a listener. */
  readonly portConflicts: ReadonlyArray<PortConflict>;
  /** null when no device paths were declared. */
  readonly devices: DeviceCheck | null;
  /** null when no runtime was asked for or it could not be identified (see errors). */
  readonly runtime: RuntimeIdentity | null;
  /** Every HCA under /sys/class/infiniband (lib/discovery/rdma.ts); null when the probe printed none. */
  readonly rdma: RdmaInventory | null;
  readonly errors: ReadonlyArray<ProbeSectionError>;
}

interface Captured {
  readonly out: string;
  readonly err: string;
  readonly rc: number;
}

function captured(s: ProbeSections, name: string): Captured | null {
  if (s[name] === undefined && s[`${name}_rc`] === undefined) return null;
  const rc = Number((s[`${name}_rc`] ?? "").trim());
  return { out: s[name] ?? "", err: (s[`${name}_err`] ?? "").trim(), rc: Number.isInteger(rc) && (s[`${name}_rc`] ?? "").trim() !== "" ? rc : -1 };
}

/** `key value` lines of the probe's own status sections. */
function keyValues(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split("\n")) {
    const m = /^(\S+)\s?(.*)$/.exec(line.trim());
    if (m && !out.has(m[1])) out.set(m[1], m[2]);
  }
  return out;
}

const tail = (err: string) => (err ? err.split("\n").slice(-3).join(" | ") : "no error output");
/** "exited 1", "exited 124 (timed out)", or that no exit code arrived. */
const exited = (rc: number) => (rc === -1 ? "printed no exit code (its output was cut short)" : rc === 124 ? "exited 124 (timed out)" : `exited ${rc}`);

function readPackages(s: ProbeSections, why: string | null): RuntimePackages & { failure?: string } {
  if (why) return { packages: null, packageCount: null, packagesSource: null, packagesUnknownReason: why };
  const attempts: Array<[Captured | null, "pip" | "importlib.metadata"]> = [
    [captured(s, "runtime_packages"), "pip"],
    [captured(s, "runtime_packages_meta"), "importlib.metadata"],
  ];
  const failures: string[] = [];
  for (const [c, source] of attempts) {
    if (!c) continue;
    if (c.rc !== 0) {
      failures.push(`${source === "pip" ? "pip list" : "importlib.metadata"} ${exited(c.rc)}: ${tail(c.err)}`);
      continue;
    }
    try {
      const all = parsePackageList(c.out);
      return { packages: packagesOfInterest(all), packageCount: Object.keys(all).length, packagesSource: source, packagesUnknownReason: null };
    } catch (e) {
      failures.push(`${source}: ${(e as Error).message}`);
    }
  }
  const reason = failures.length > 0 ? failures.join("; ") : "the probe did not read them";
  return { packages: null, packageCount: null, packagesSource: null, packagesUnknownReason: reason, failure: reason };
}

/**
 * Reads the probe's output into one HostFacts. Nothing throws: every section that cannot be read adds
 * an error naming the host and the section, and its facts are null.
 */
export function parseProbe(output: string, opts: ProbeOptions): HostFacts {
  const host = opts.alias;
  const s = splitSections(output);
  const errors: ProbeSectionError[] = [];
  const report = (section: string, detail: string) => {
    const d = detail.startsWith(`host ${host}: `) ? detail.slice(`host ${host}: `.length) : detail;
    errors.push({ host, section, message: `host ${host}, probe section ${section}: ${d}` });
  };
  const attempt = <T>(section: string, fn: () => T): T | null => {
    try {
      return fn();
    } catch (e) {
      report(section, e instanceof ModelConfigError ? e.detail : (e as Error).message);
      return null;
    }
  };

  if (s.end === undefined) report("end", "the probe output stopped early (no @@end marker); the login or the script was cut short — run discovery again");

  const hostname = (s.hostname ?? "").trim();
  if (!hostname) report("hostname", "`hostname` printed nothing");

  const accelerators = inventoryFrom(s);

  // Fabric: the unique global address on the interface, or the operator's choice among several.
  const fabricText = s.fabric ?? "";
  const addresses = parseGlobalAddresses(fabricText);
  const address = attempt("fabric", () => {
    if (addresses.length === 0 && /does not exist|Cannot find device/i.test(fabricText)) {
      throw new Error(`fabric interface ${opts.fabricInterface} does not exist on this host; check hosts[].fabricInterface (ip: ${fabricText.trim()})`);
    }
    return chooseFabricAddress(host, opts.fabricInterface, addresses, opts.fabricAddressChoice);
  });

  const model = opts.modelDir ? readModel(s, opts.modelDir, host, report, attempt) : null;

  // Listeners and the planned ports they block.
  let listeners: Listener[] | null = null;
  const ss = captured(s, "listeners");
  if (!ss) report("listeners", "the probe printed no listener section");
  else if (ss.rc !== 0) report("listeners", `ss -ltnp ${exited(ss.rc)}: ${tail(ss.err)}`);
  else listeners = attempt("listeners", () => parseListeners(ss.out));
  const portConflicts =
    listeners && opts.plannedPorts ? busyPlannedPorts(listeners, opts.plannedPorts, { host, ignorePids: opts.ignorePids }) : [];

  const declared =
    opts.devicePaths && opts.devicePaths.length > 0
      ? attempt("devices", () => parseDeviceSection(s.devices ?? "", opts.devicePaths, host))
      : null;
  // ROCm engines need /dev/kfd and their GPUs' render nodes, as sysfs maps them: checked like declared paths.
  let devices = declared;
  if (accelerators.vendor === "amd") {
    const render = new Map(accelerators.gpus.flatMap((g) => (g.renderNode ? [[g.index, g.renderNode] as const] : [])));
    for (const missing of missingRenderNodes(accelerators.gpus, render)) report("drm", missing);
    const seen = attempt("gpu_devices", () => parseDeviceSection(s.gpu_devices ?? "").paths);
    if (seen) {
      const gpuPaths = pickDevicePaths(seen, amdDevicePaths(render)).filter((p) => !declared?.paths.some((d) => d.path === p.path));
      devices = deviceCheck([...(declared?.paths ?? []), ...gpuPaths], host);
    }
  }

  const runtime = opts.runtime ? readRuntime(s, opts.runtime, host, report, attempt) : null;

  const rdma = readRdmaSections(s, opts.rdmaPorts ?? [], report);

  return {
    alias: host,
    hostname,
    accelerators,
    fabric: { interface: opts.fabricInterface, addresses, address },
    model,
    listeners,
    portConflicts,
    devices,
    runtime,
    rdma,
    errors,
  };
}

type Report = (section: string, detail: string) => void;
type Attempt = <T>(section: string, fn: () => T) => T | null;

function readModel(s: ProbeSections, dir: string, host: string, report: Report, attempt: Attempt): ModelFacts | null {
  const status = keyValues(s.model ?? "");
  if (s.model === undefined) {
    report("model", "the probe printed no model section");
    return null;
  }
  if (status.get("dir") !== "present") {
    report("model", `checkpoint directory ${dir} does not exist; stage the checkpoint there (model.checkpointDir) before discovery`);
    return null;
  }
  const file = (section: string) => attempt(section, () => parseModelFileSection(s[section] ?? ""));
  const config = file("model_config");
  const tokenizer = file("model_tokenizer_config");
  const generation = file("model_generation_config");
  const base = dir.replace(/\/+$/, "");

  // A missing file yields null: modelRequirements refuses a missing config.json, the others are optional.
  const bytesOf = (section: string, f: ReturnType<typeof file>, name: string): Buffer | null => {
    if (!f) return null;
    switch (f.status) {
      case "file":
        return f.bytes;
      case "missing":
        return null;
      case "toolarge":
        report(section, `${base}/${name} has ${f.size} bytes, over the probe's bound; raise maxFileBytes if it is genuine`);
        return null;
      case "nobase64":
        report(section, `the host has no base64 command to send ${base}/${name} (install coreutils)`);
        return null;
      default:
        report(section, `${base}/${name} is ${f.status === "notafile" ? "not a regular file" : f.status}`);
        return null;
    }
  };

  const configBytes = bytesOf("model_config", config, "config.json");
  const tokenizerBytes = bytesOf("model_tokenizer_config", tokenizer, "tokenizer_config.json");
  const generationBytes = bytesOf("model_generation_config", generation, "generation_config.json");
  if (!configBytes && config?.status !== "missing") return null; // already reported

  const requirements = attempt("model_config", () => modelRequirements(configBytes, tokenizerBytes, { host, dir: base }));
  if (!requirements) return null;
  const generationConfig = generationBytes
    ? attempt("model_generation_config", () => {
        const v: unknown = JSON.parse(generationBytes.toString("utf8"));
        if (typeof v !== "object" || v === null || Array.isArray(v)) throw new Error(`${base}/generation_config.json does not hold a JSON object`);
        return v as Record<string, unknown>;
      })
    : null;
  return {
    dir: base,
    requirements,
    generationConfig,
    tokenizerConfigSha256: tokenizer?.status === "file" ? (tokenizer.remoteSha256 ?? sha256Hex(tokenizer.bytes)) : null,
    chatTemplateFiles: [...(s.model ?? "").matchAll(/^extra (\S+)$/gm)].map((m) => m[1]),
  };
}

function sha256Hex(bytes: Buffer): string {
  return createHash("sha256").update(bytes).digest("hex");
}

function readRuntime(s: ProbeSections, spec: RuntimeProbeSpec, host: string, report: Report, attempt: Attempt): RuntimeIdentity | null {
  const status = keyValues(s.runtime ?? "");
  if (s.runtime === undefined || status.get("kind") !== spec.kind) {
    report("runtime", `the probe printed no ${spec.kind} runtime section`);
    return null;
  }
  if (spec.kind === "native") {
    const command = spec.vllmCommand ?? "vllm";
    if (status.get("script") === "missing") {
      report("runtime", `runtime.vllmCommand ${JSON.stringify(command)} is not an executable on this login's PATH; install vLLM or set runtime.vllmCommand to its path`);
      return null;
    }
    const scriptKind = (status.get("script") ?? "binary") as ScriptKind;
    const path = status.get("path") ?? null;
    const interpreter = status.get("interpreter") && status.get("interpreter") !== "-" ? status.get("interpreter")! : null;
    let vllmVersion: string | null = null;
    const v = captured(s, "runtime_version");
    if (!v) report("runtime_version", "the probe did not run `vllm --version`");
    else if (v.rc !== 0) report("runtime_version", `${path ?? command} --version ${exited(v.rc)}: ${tail(v.err)}`);
    else {
      vllmVersion = parseVllmVersion(v.out) ?? parseVllmVersion(v.err);
      if (!vllmVersion) report("runtime_version", `${path ?? command} --version printed no version: ${JSON.stringify((v.out + v.err).trim().slice(0, 200))}`);
    }
    const why =
      scriptKind !== "python"
        ? `${path ?? command} is ${scriptKind === "shell" ? "a shell script" : scriptKind === "binary" ? "not a script" : "a non-Python script"}, not a Python console script, so its environment's packages cannot be read`
        : !interpreter
          ? `${path ?? command} is a Python console script but no Python interpreter was found beside it or in its #! line`
          : null;
    const { failure: _ignored, ...packages } = readPackages(s, why);
    const identity: NativeRuntimeIdentity = { kind: "native", command, path, scriptKind, interpreter, vllmVersion, ...packages };
    return identity;
  }

  // docker
  if (status.get("docker") === "missing" || !status.has("docker")) {
    report("runtime", `the docker command ${JSON.stringify(spec.dockerCommand ?? "docker")} is not on this login's PATH; install Docker or set runtime.dockerCommand`);
    return null;
  }
  const inspected = captured(s, "runtime_inspect");
  if (!inspected) {
    report("runtime_inspect", "the probe did not run `docker image inspect`");
    return null;
  }
  if (inspected.rc !== 0) {
    report(
      "runtime_inspect",
      /no such image/i.test(inspected.err)
        ? `runtime.image ${spec.image} is not on this host (${tail(inspected.err)}); pull or load the pinned image before discovery`
        : `docker image inspect ${spec.image} ${exited(inspected.rc)}: ${tail(inspected.err)}`,
    );
    return null;
  }
  const inspect = attempt("runtime_inspect", () => parseImageInspect(inspected.out));
  if (!inspect) return null;
  const { failure, ...packages } = readPackages(s, null);
  if (failure) report("runtime_packages", `the short-lived container of ${inspect.imageId} could not list its Python packages: ${failure}`);
  const identity: DockerRuntimeIdentity = dockerRuntimeIdentity(spec.image, inspect, packages, host);
  return identity;
}

/** Everything that must be resolved before launch: section errors, missing devices, busy ports, image identity. */
export function blockingProblems(facts: HostFacts): string[] {
  const out = facts.errors.map((e) => e.message);
  // These messages already name the host.
  if (facts.devices?.message) out.push(facts.devices.message);
  out.push(...facts.portConflicts.map((c) => c.message));
  if (facts.runtime?.kind === "docker") out.push(...facts.runtime.identity.problems);
  return out;
}

/** Throws one error listing every section error, or returns the facts when there are none. */
export function assertProbeClean(facts: HostFacts): HostFacts {
  if (facts.errors.length > 0) throw new Error(facts.errors.map((e) => e.message).join("\n"));
  return facts;
}

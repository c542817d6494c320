import { sha256Json } from "../digest";
import type { LaunchPlacement, LaunchPlan } from "../launch/plan";

/**
 * The container form of a launch plan: the complete `docker run` argv (pure; no I/O), shared by the
 * docker CLI runtime (lib/runtime/docker-cli.ts) and, later, the @pulumi/docker runtime.
 *
 * How the plan's argv maps onto the image: the plan starts `<vllmCommand> serve <checkpointDir> ...`.
 * The engine image's entrypoint is `vllm serve`, so the container gets everything after `serve`, with
 * `<checkpointDir>` replaced by `/model` (where the checkpoint is bind-mounted read-only). `vllmCommand`
 * (argv[0]) is a native-only setting and does not reach the container. Any other argument that names a
 * path inside the checkpoint (`--tokenizer <checkpointDir>/tok`) is rewritten to the same path under
 * `/model`; a `--tokenizer` elsewhere on the host is mounted read-only at `/tokenizer`.
 *
 * GPU selection (vllm-facts.md section 4): vLLM picks devices with `CUDA_VISIBLE_DEVICES` (NVIDIA) or
 * `HIP_VISIBLE_DEVICES` (ROCm, copied into CUDA_VISIBLE_DEVICES; set only one). The container is given
 * only the selected GPUs:
 *   - NVIDIA: `--gpus "device=2,3"`. This is docker's own device request; it works with the NVIDIA
 *     container toolkit whether or not `nvidia` is the daemon's runtime, and it overrides the
 *     `NVIDIA_VISIBLE_DEVICES=all` that CUDA base images (vllm/vllm-openai among them) bake in, which
 *     `--runtime nvidia` alone would honour, handing the engine every GPU on the host. The value carries
 *     literal double quotes because docker parses `--gpus` as CSV and `device=2,3` would split at the comma.
 *     `dockerRuntime: "nvidia"` adds `--runtime nvidia`, as vLLM's docs show, for hosts that need it.
 *   - ROCm: `--device /dev/kfd` plus only the selected GPUs' render nodes, as discovery read them from the
 *     host's /sys/class/drm (never all of `/dev/dri`, and never `renderD<128+i>` assumed: the kernel numbers
 *     render nodes in probe order), `--group-add video`, `--security-opt seccomp=unconfined`, `--cap-add SYS_PTRACE`.
 * Inside the container the runtime numbers the exposed GPUs from 0, so the plan's visibility variable
 * (host indices, e.g. `2,3`) is rewritten to container indices (`0,1`); keeping `2,3` would select GPUs
 * the container does not have. `vendor: "none"` (the simulated fleet: no GPU devices, no toolkit) adds no
 * device flags and passes the plan's environment through unchanged.
 *
 * The GPU ids, vendor, visibility variable, render nodes, transport and RDMA devices are the plan's `placement`,
 * resolved once with its command; nothing here reads them back out of the plan's environment text. The
 * GPU ids were checked where they were resolved (lib/launch/policy.ts: visible on the host, distinct,
 * never none on a GPU host); this file takes them as they are.
 */

/** How the container is run besides the plan: GPUs, vendor and RDMA devices are the plan's `placement`. */
export interface ContainerRuntimeOptions {
  /** Immutable image: `sha256:<64 hex>` (an image ID) or `<repo>@sha256:<64 hex>` (a registry digest). */
  readonly image: string;
  /** Checkpoint directory on the host, mounted read-only at `/model`. */
  readonly modelDir: string;
  readonly engineId: string;
  readonly stack: string;
  /** Per-attempt token persisted in the engine's run dir before `docker run` (see docker-cli.ts). */
  readonly launchToken: string;
  /** Host path of the private env file (0600) that carries the API key: `--env-file`. */
  readonly envFile: string;
  /** `--runtime <name>`, e.g. "nvidia"; default the daemon's default runtime. */
  readonly dockerRuntime?: string;
}

export const LABELS = {
  stack: "narwhal.fleet/stack",
  engine: "narwhal.fleet/engine",
  planSha256: "narwhal.fleet/plan-sha256",
  launchToken: "narwhal.fleet/launch-token",
  /** The host GPU ids the container is given, comma-separated: what engines sharing a GPU wait on. */
  gpus: "narwhal.fleet/gpus",
  /** sha256 over the whole run argv except the launch token: image, devices, mounts, env, args. */
  specSha256: "narwhal.fleet/spec-sha256",
} as const;

export const CONTAINER_MODEL_DIR = "/model";
export const CONTAINER_TOKENIZER_DIR = "/tokenizer";

export interface ContainerSpec {
  /** `narwhal-<stack>-<engineId>`: the daemon refuses a second container of that name. */
  readonly name: string;
  readonly image: string;
  readonly labels: Readonly<Record<string, string>>;
  /** The container's environment without secrets (visibility rewritten to container indices). */
  readonly env: Readonly<Record<string, string>>;
  /** The arguments after the image, i.e. after the entrypoint's `vllm serve`. */
  readonly serveArgs: ReadonlyArray<string>;
  /** `run --detach ... <image> <serveArgs>`: the docker client's argv without the client itself. */
  readonly runArgv: ReadonlyArray<string>;
  readonly specSha256: string;
}

const IMAGE_ID = /^sha256:[0-9a-f]{64}$/;
const IMAGE_DIGEST = /^[a-z0-9]+(?:[._-][a-z0-9]+)*(?::[0-9]+)?(?:\/[a-z0-9]+(?:[._-][a-z0-9]+)*)*@sha256:[0-9a-f]{64}$/;
/** Docker's container-name rule; stack and engine ids are part of the name, so they must fit it. */
const NAME_PART = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;
/**
 * Visibility variables an engine's own `engineEnv` may add beside the placement's (config refuses only the
 * two the program sets): host indices the container does not have, like the placement's.
 */
const OTHER_VISIBILITY_VARS = ["CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"] as const;

export function isImageId(image: string): boolean {
  return IMAGE_ID.test(image);
}

export function isImageDigest(image: string): boolean {
  return IMAGE_DIGEST.test(image);
}

export function containerName(stack: string, engineId: string): string {
  return `narwhal-${stack}-${engineId}`;
}

function fail(message: string): never {
  throw new Error(`container spec: ${message}`);
}

function underDir(path: string, dir: string): string | undefined {
  const d = dir.replace(/\/+$/, "");
  if (path === d) return "";
  if (path.startsWith(d + "/")) return path.slice(d.length);
  return undefined;
}

/** Rewrites host paths inside the checkpoint to `/model/...`, in `--flag value` and `--flag=value` forms. */
function rewriteArgs(args: ReadonlyArray<string>, modelDir: string): { args: string[]; tokenizerMount?: string } {
  const out: string[] = [];
  let tokenizerMount: string | undefined;
  const mapValue = (flag: string | undefined, value: string): string => {
    const rest = underDir(value, modelDir);
    if (rest !== undefined) return CONTAINER_MODEL_DIR + rest;
    if (flag === "--tokenizer" && value.startsWith("/")) {
      tokenizerMount = value;
      return CONTAINER_TOKENIZER_DIR;
    }
    return value;
  };
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    const eq = a.startsWith("--") ? a.indexOf("=") : -1;
    if (eq > 0) {
      out.push(`${a.slice(0, eq)}=${mapValue(a.slice(0, eq), a.slice(eq + 1))}`);
    } else if (a.startsWith("--")) {
      out.push(a);
    } else {
      out.push(mapValue(i > 0 ? args[i - 1] : undefined, a));
    }
  }
  return { args: out, tokenizerMount };
}

/** Device flags for the selected GPUs; see the module comment for why each vendor gets what. */
function gpuFlags(placement: LaunchPlacement, opts: ContainerRuntimeOptions): string[] {
  const ids = placement.gpuIds;
  switch (placement.vendor) {
    case "nvidia":
      return [...(opts.dockerRuntime ? ["--runtime", opts.dockerRuntime] : []), "--gpus", `"device=${ids.join(",")}"`];
    case "amd": {
      const nodes = placement.renderNodes;
      if (nodes.length !== ids.length) fail(`the placement has ${nodes.length} render node(s) for GPU ids ${ids.join(",")}; discovery reads them from the host's /sys/class/drm`);
      for (const n of nodes) {
        if (!/^\/dev\/dri\/renderD[0-9]+$/.test(n)) fail(`render node ${JSON.stringify(n)} is not /dev/dri/renderD<N>; the whole of /dev/dri is never mapped`);
      }
      return [
        ...(opts.dockerRuntime ? ["--runtime", opts.dockerRuntime] : []),
        "--device", "/dev/kfd",
        ...nodes.flatMap((n) => ["--device", n]),
        "--group-add", "video",
        "--security-opt", "seccomp=unconfined",
        "--cap-add", "SYS_PTRACE",
      ];
    }
    case "none":
      return opts.dockerRuntime ? ["--runtime", opts.dockerRuntime] : [];
  }
}

/**
 * The container's environment: the plan's, with GPU visibility renumbered for the exposed devices. The
 * placement's own variable is written from its ids; another visibility variable the engine's environment
 * adds must name the same host GPUs, and is renumbered the same way.
 */
function containerEnv(plan: LaunchPlan): Record<string, string> {
  const { gpuIds, vendor, visibilityVariable } = plan.placement;
  const env: Record<string, string> = { ...plan.env };
  const hostList = gpuIds.join(",");
  const containerList = gpuIds.map((_, i) => i).join(",");
  for (const v of OTHER_VISIBILITY_VARS) {
    if (v === visibilityVariable || env[v] === undefined) continue;
    if (env[v] !== hostList) fail(`the plan sets ${v}=${env[v]} but the container is given GPUs ${hostList || "(none)"}; they must agree`);
    if (vendor !== "none") env[v] = containerList;
  }
  if (vendor !== "none") env[visibilityVariable] = containerList;
  return env;
}

/** Builds the complete `docker run` argv for one engine. Throws on any inconsistency between plan and options. */
export function containerSpec(plan: LaunchPlan, opts: ContainerRuntimeOptions): ContainerSpec {
  const { gpuIds, vendor, transport, rdmaDevices: rdma } = plan.placement;
  if (!isImageId(opts.image) && !isImageDigest(opts.image)) {
    fail(`image ${JSON.stringify(opts.image)} is not immutable: expected sha256:<64 hex> or <repo>@sha256:<64 hex>`);
  }
  if (!NAME_PART.test(opts.stack)) fail(`stack ${JSON.stringify(opts.stack)} cannot be part of a container name ([A-Za-z0-9][A-Za-z0-9_.-]*)`);
  if (!NAME_PART.test(opts.engineId)) fail(`engine id ${JSON.stringify(opts.engineId)} cannot be part of a container name ([A-Za-z0-9][A-Za-z0-9_.-]*)`);
  if (opts.engineId !== plan.engineId) fail(`engine id ${opts.engineId} does not match the plan's ${plan.engineId}`);
  if (!opts.launchToken || /[\s=]/.test(opts.launchToken)) fail("launch token must be a non-empty word");
  if (!opts.modelDir.startsWith("/")) fail(`model dir ${JSON.stringify(opts.modelDir)} must be an absolute host path`);
  if (!opts.envFile.startsWith("/")) fail(`env file ${JSON.stringify(opts.envFile)} must be an absolute host path`);
  for (const d of rdma) if (!d.startsWith("/dev/")) fail(`RDMA device ${JSON.stringify(d)} is not a /dev path`);
  if (transport === "ucx_rdma" && rdma.length === 0) {
    fail(`the plan's transport is ucx_rdma (UCX_TLS=${plan.env.UCX_TLS}) but no RDMA devices are given to the container; list them in launch.rdma.devices or the engine's overrides.rdma.devices`);
  }

  const [, sub, model, ...rest] = plan.argv;
  if (sub !== "serve" || model === undefined) fail(`the plan's argv must start with "<vllm> serve <model>", got ${JSON.stringify(plan.argv.slice(0, 3))}`);
  if (underDir(model, opts.modelDir) !== "") fail(`the plan serves ${model} but the mounted model dir is ${opts.modelDir}`);
  const rewritten = rewriteArgs(rest, opts.modelDir);
  const serveArgs = [CONTAINER_MODEL_DIR, ...rewritten.args];
  const env = containerEnv(plan);

  const name = containerName(opts.stack, opts.engineId);
  const build = (labels: Record<string, string>): string[] => [
    "run",
    "--detach",
    "--name", name,
    // Images are checked (and, for a digest, pulled under the pull deadline) before run: never pull here.
    "--pull", "never",
    "--network", "host",
    "--ipc", "host",
    "--mount", `type=bind,source=${opts.modelDir},target=${CONTAINER_MODEL_DIR},readonly`,
    ...(rewritten.tokenizerMount ? ["--mount", `type=bind,source=${rewritten.tokenizerMount},target=${CONTAINER_TOKENIZER_DIR},readonly`] : []),
    ...gpuFlags(plan.placement, opts),
    // RDMA: the verbs devices, and unlimited locked memory so UCX can register (pin) the KV cache.
    ...rdma.flatMap((d) => ["--device", d]),
    ...(rdma.length > 0 ? ["--cap-add", "IPC_LOCK", "--ulimit", "memlock=-1:-1"] : []),
    "--env-file", opts.envFile,
    ...Object.entries(env).flatMap(([k, v]) => ["-e", `${k}=${v}`]),
    ...Object.entries(labels).flatMap(([k, v]) => ["--label", `${k}=${v}`]),
    opts.image,
    ...serveArgs,
  ];
  const identity: Record<string, string> = {
    [LABELS.stack]: opts.stack,
    [LABELS.engine]: opts.engineId,
    [LABELS.planSha256]: plan.planSha256,
    [LABELS.gpus]: vendor === "none" ? "" : gpuIds.join(","),
  };
  // The spec hash covers everything that decides what runs; the per-attempt token is left out, so two
  // attempts at the same spec hash equally and a running one can be adopted.
  const specSha256 = sha256Json(build(identity));
  const labels = { ...identity, [LABELS.specSha256]: specSha256, [LABELS.launchToken]: opts.launchToken };
  return { name, image: opts.image, labels, env, serveArgs, runArgv: build(labels), specSha256 };
}

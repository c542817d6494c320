/**
 * What one engine's image check is run against, validated before anything remote is touched, and the
 * runtime check's request derived from the launch plan: the plan's `--trust-remote-code`, its final
 * `--tokenizer` (default the checkpoint), its `--kv-transfer-config`, with paths as the runtime sees them.
 */
import type { LaunchRecord } from "../launch/plan";
import { isImageDigest, isImageId, CONTAINER_MODEL_DIR, CONTAINER_TOKENIZER_DIR } from "../runtime/container-spec";
import type { RuntimeCheckRequest } from "./python";

/** The runtime an engine's plan runs in: the host's vllm command, or an image through a docker client. */
export type CheckRuntime =
  | { readonly kind: "native"; readonly vllmCommand: string }
  | { readonly kind: "docker"; readonly image: string; readonly dockerCommand: string };

/** A spec whose runtime is known to be of one kind. */
export type NativeCheckSpec = ImageCheckSpec & { readonly runtime: Extract<CheckRuntime, { kind: "native" }> };
export type DockerCheckSpec = ImageCheckSpec & { readonly runtime: Extract<CheckRuntime, { kind: "docker" }> };

export interface ImageCheckSpec {
  readonly engineId: string;
  readonly hostAlias: string;
  /** The rendered launch plan (launch.json); its planSha256 is what the check is bound to. */
  readonly plan: LaunchRecord;
  readonly runtime: CheckRuntime;
  /** Checkpoint directory on the host (the plan's model argument); mounted read-only at /model in a container. */
  readonly modelDir: string;
  /** Package name -> exact version the runtime must have (vllm at least: discovery's version). */
  readonly pins: Readonly<Record<string, string>>;
  /** The model keeps a convolutional SSM state: VLLM_SSM_CONV_STATE_LAYOUT must resolve to DS. */
  readonly dsRequired: boolean;
  /** `inspectS` bounds identity reads (inspect, --version); `checkS` bounds the runtime check itself. */
  readonly deadlines: { readonly inspectS: number; readonly checkS: number };
}

const ENGINE_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;
const PACKAGE = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The last value of `--flag v` or `--flag=v` in argv, or undefined. */
export function flagValue(argv: ReadonlyArray<string>, flag: string): string | undefined {
  let found: string | undefined;
  argv.forEach((a, i) => {
    if (a === flag && i + 1 < argv.length) found = argv[i + 1];
    else if (a.startsWith(`${flag}=`)) found = a.slice(flag.length + 1);
  });
  return found;
}

/** One unusable input: the field (as the resource names it) and why. */
export interface SpecProblem {
  readonly property: string;
  readonly reason: string;
}

/** Every problem with the spec, each naming its field; empty when the check can run. */
export function imageCheckProblems(spec: ImageCheckSpec): SpecProblem[] {
  const out: SpecProblem[] = [];
  const bad = (property: string, reason: string) => out.push({ property, reason });
  const { plan, runtime } = spec;
  if (!ENGINE_ID.test(spec.engineId)) bad("engineId", `engineId ${JSON.stringify(spec.engineId)} must match ${ENGINE_ID}`);
  if (!spec.hostAlias) bad("hostAlias", "hostAlias must be a non-empty string");
  if (plan.engineId !== spec.engineId) bad("plan", `plan.engineId ${JSON.stringify(plan.engineId)} is not the engine ${spec.engineId}`);
  if (!/^sha256:[0-9a-f]{64}$/.test(plan.planSha256)) bad("plan", `plan.planSha256 ${JSON.stringify(plan.planSha256)} is not sha256:<64 hex>`);
  if (plan.argv[1] !== "serve" || !plan.argv[2]) bad("plan", `plan.argv must start with "<vllm> serve <model>", got ${JSON.stringify(plan.argv.slice(0, 3))}`);
  else if (plan.argv[2] !== spec.modelDir) bad("modelDir", `modelDir ${JSON.stringify(spec.modelDir)} is not the plan's model ${JSON.stringify(plan.argv[2])}`);
  if (!spec.modelDir.startsWith("/")) bad("modelDir", `modelDir ${JSON.stringify(spec.modelDir)} must be an absolute host path`);
  const kv = flagValue(plan.argv, "--kv-transfer-config");
  if (kv === undefined) bad("plan", "plan.argv has no --kv-transfer-config: the connector cannot be checked");
  else {
    try {
      const v: unknown = JSON.parse(kv);
      if (!v || typeof v !== "object" || Array.isArray(v)) bad("plan", "plan.argv --kv-transfer-config is not a JSON object");
    } catch {
      bad("plan", "plan.argv --kv-transfer-config is not valid JSON");
    }
  }
  for (const k of Object.keys(plan.env)) if (!ENV_NAME.test(k)) bad("plan", `plan.env has ${JSON.stringify(k)}, not an environment variable name`);
  if (!Object.keys(spec.pins).includes("vllm")) bad("pins", "pins must pin vllm (the version discovery read)");
  for (const [name, version] of Object.entries(spec.pins)) {
    if (!PACKAGE.test(name)) bad("pins", `pins has ${JSON.stringify(name)}, not a package name`);
    if (typeof version !== "string" || !/^\S+$/.test(version)) bad("pins", `pins.${name} must be a version without spaces, got ${JSON.stringify(version)}`);
  }
  if (runtime.kind === "native") {
    if (!runtime.vllmCommand || runtime.vllmCommand.startsWith("-") || /[\n\r]/.test(runtime.vllmCommand)) {
      bad("runtime", `runtime.vllmCommand ${JSON.stringify(runtime.vllmCommand)} must be a command name or path`);
    }
  } else if (runtime.kind === "docker") {
    if (!isImageId(runtime.image) && !isImageDigest(runtime.image)) {
      bad("runtime", `runtime.image ${JSON.stringify(runtime.image)} is not immutable: expected sha256:<64 hex> or <repo>@sha256:<64 hex>`);
    }
    if (!runtime.dockerCommand || runtime.dockerCommand.startsWith("-") || /[\n\r]/.test(runtime.dockerCommand)) {
      bad("runtime", `runtime.dockerCommand ${JSON.stringify(runtime.dockerCommand)} must be a command name or path`);
    }
  } else bad("runtime", `runtime.kind must be "native" or "docker", got ${JSON.stringify((runtime as { kind?: unknown }).kind)}`);
  for (const k of ["inspectS", "checkS"] as const) {
    const s = spec.deadlines[k];
    if (!(typeof s === "number" && Number.isFinite(s) && s > 0)) bad("deadlines", `deadlines.${k} must be a positive number of seconds, got ${typeof s === "number" ? s : JSON.stringify(s)}`);
  }
  return out;
}

export interface PreparedRequest {
  readonly request: RuntimeCheckRequest;
  /** A tokenizer outside the checkpoint, mounted read-only at /tokenizer in a container. */
  readonly tokenizerMount?: string;
}

/** The runtime check's request for a validated spec, with paths as the runtime sees them. */
export function runtimeCheckRequest(spec: ImageCheckSpec): PreparedRequest {
  const { plan } = spec;
  const tokenizer = flagValue(plan.argv, "--tokenizer") ?? spec.modelDir;
  const base = {
    pins: { ...spec.pins },
    kvTransferConfig: JSON.parse(flagValue(plan.argv, "--kv-transfer-config")!) as Record<string, unknown>,
    trustRemoteCode: plan.argv.includes("--trust-remote-code"),
    dsRequired: spec.dsRequired,
  };
  if (spec.runtime.kind === "native") return { request: { ...base, model: spec.modelDir, tokenizer } };
  // In a container the checkpoint is /model, and a tokenizer elsewhere on the host is /tokenizer (as the engine's container sees them).
  const dir = spec.modelDir.replace(/\/+$/, "");
  if (tokenizer === dir || tokenizer.startsWith(`${dir}/`)) {
    return { request: { ...base, model: CONTAINER_MODEL_DIR, tokenizer: CONTAINER_MODEL_DIR + tokenizer.slice(dir.length) } };
  }
  if (tokenizer.startsWith("/")) return { request: { ...base, model: CONTAINER_MODEL_DIR, tokenizer: CONTAINER_TOKENIZER_DIR }, tokenizerMount: tokenizer };
  return { request: { ...base, model: CONTAINER_MODEL_DIR, tokenizer } };
}

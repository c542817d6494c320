/**
 * Runtime identity: which vLLM (and which torch, NIXL, UCX, transformers) an engine will run.
 *   native  `vllm --version`, and `pip list` by the interpreter of the vllm console script;
 *   docker  `docker image inspect` (ID, RepoDigests, created, UCX_/VLLM_/NCCL_ environment), the
 *           immutable-identity check of the configured image, and `pip list` in a short-lived container.
 */

/** Normalized distribution name → version (PEP 503 names: lower case, runs of -_. become -). */
export type PackageMap = Readonly<Record<string, string>>;

export function normalizePackageName(name: string): string {
  return name.toLowerCase().replace(/[-_.]+/g, "-");
}

/**
 * Parses `python3 -m pip list --format json` (or the importlib.metadata fallback, same shape):
 * `[{"name": "vllm", "version": "0.29.0"}, ...]`. Lines before the JSON (warnings) are skipped.
 */
export function parsePackageList(text: string): PackageMap {
  const line = text.split("\n").find((l) => l.trimStart().startsWith("["));
  if (line === undefined) throw new Error(`no JSON package list in the output${text.trim() ? `: ${JSON.stringify(text.trim().slice(0, 200))}` : " (it was empty)"}`);
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (e) {
    throw new Error(`the package list is not valid JSON (${(e as Error).message})`);
  }
  if (!Array.isArray(value)) throw new Error("the package list is not a JSON array");
  const out: Record<string, string> = {};
  for (const item of value) {
    const { name, version } = (item ?? {}) as { name?: unknown; version?: unknown };
    if (typeof name === "string" && typeof version === "string") out[normalizePackageName(name)] = version;
  }
  return out;
}

const OF_INTEREST = new Set(["vllm", "torch", "transformers", "tokenizers", "triton", "pytorch-triton-rocm", "safetensors", "huggingface-hub"]);
const OF_INTEREST_PREFIXES = ["nixl", "ucx-py", "ucxx", "libucx", "flashinfer"];

/** The packages that decide serving behaviour: vllm, torch, transformers, NIXL, UCX bindings, ... */
export function packagesOfInterest(all: PackageMap): PackageMap {
  const out: Record<string, string> = {};
  for (const name of Object.keys(all).sort()) {
    if (OF_INTEREST.has(name) || OF_INTEREST_PREFIXES.some((p) => name === p || name.startsWith(`${p}-`))) out[name] = all[name]!;
  }
  return out;
}

const VERSION_LINE = /^v?(\d+\.\d+(?:\.\d+)*(?:(?:a|b|rc)\d+)?(?:\.post\d+)?(?:\.dev\d+)?(?:\+[A-Za-z0-9.]+)?)$/;

/** The version `vllm --version` prints: its last version-shaped line (log lines may precede it). */
export function parseVllmVersion(text: string): string | null {
  const lines = text.split("\n").map((l) => l.trim()).filter(Boolean);
  for (let i = lines.length - 1; i >= 0; i--) {
    const m = VERSION_LINE.exec(lines[i]);
    if (m) return m[1];
  }
  return null;
}

/** How the vllm executable starts: a pip console script (Python), another script, or a binary. */
export type ScriptKind = "python" | "shell" | "other-script" | "binary" | "missing";

export interface RuntimePackages {
  /** null when the packages could not be read; `packagesUnknownReason` says why. */
  readonly packages: PackageMap | null;
  readonly packageCount: number | null;
  readonly packagesSource: "pip" | "importlib.metadata" | null;
  readonly packagesUnknownReason: string | null;
}

export interface NativeRuntimeIdentity extends RuntimePackages {
  readonly kind: "native";
  /** runtime.vllmCommand as configured. */
  readonly command: string;
  /** Where the command resolved on the host's PATH (symlinks followed), or null. */
  readonly path: string | null;
  readonly scriptKind: ScriptKind;
  /** The Python interpreter that runs the console script: the one next to it, else its shebang's. */
  readonly interpreter: string | null;
  readonly vllmVersion: string | null;
}

// ---------- docker ----------

export type ImageRef =
  | { readonly kind: "id"; readonly id: string }
  | { readonly kind: "short-id"; readonly prefix: string }
  | { readonly kind: "digest"; readonly repository: string; readonly digest: string }
  | { readonly kind: "tag"; readonly repository: string; readonly tag: string };

/** Classifies an image reference: full ID, short ID, `repo[:tag]@sha256:…` digest, or `repo[:tag]`. */
export function parseImageRef(ref: string): ImageRef {
  const id = /^(?:sha256:)?([0-9a-f]{64})$/.exec(ref);
  if (id) return { kind: "id", id: `sha256:${id[1]}` };
  const short = /^(?:sha256:([0-9a-f]{1,63})|([0-9a-f]{12,63}))$/.exec(ref);
  if (short) return { kind: "short-id", prefix: `sha256:${short[1] ?? short[2]}` };
  const at = ref.lastIndexOf("@");
  if (at > 0) return { kind: "digest", repository: stripTag(ref.slice(0, at)).repository, digest: ref.slice(at + 1) };
  const { repository, tag } = stripTag(ref);
  return { kind: "tag", repository, tag: tag ?? "latest" };
}

function stripTag(name: string): { repository: string; tag?: string } {
  const colon = name.lastIndexOf(":");
  return colon > name.lastIndexOf("/") ? { repository: name.slice(0, colon), tag: name.slice(colon + 1) } : { repository: name };
}

/** Docker Hub names as `docker image inspect` prints them: no docker.io/ and no library/ for official images. */
export function familiarRepository(repository: string): string {
  const r = repository.replace(/^(?:docker\.io|index\.docker\.io|registry-1\.docker\.io)\//, "");
  return /^library\/[^/]+$/.test(r) ? r.slice("library/".length) : r;
}

export interface ImageInspect {
  readonly imageId: string;
  readonly repoTags: ReadonlyArray<string>;
  readonly repoDigests: ReadonlyArray<string>;
  readonly created: string | null;
  readonly architecture: string | null;
  readonly os: string | null;
  /** The image's runtime environment, UCX_*, VLLM_* and NCCL_* keys only. */
  readonly env: Readonly<Record<string, string>>;
}

const RUNTIME_ENV_KEY = /^(?:UCX|VLLM|NCCL)_/;

/** Parses `docker image inspect <ref> --format '{{json .}}'` (one object; a one-element array is accepted). */
export function parseImageInspect(text: string): ImageInspect {
  let value: unknown;
  try {
    value = JSON.parse(text.trim());
  } catch (e) {
    throw new Error(`docker image inspect did not print JSON (${(e as Error).message}): ${JSON.stringify(text.trim().slice(0, 200))}`);
  }
  if (Array.isArray(value) && value.length === 1) value = value[0];
  const o = (value ?? {}) as Record<string, unknown>;
  if (typeof o.Id !== "string" || !o.Id.startsWith("sha256:")) throw new Error("docker image inspect printed no image Id");
  const strings = (v: unknown) => (Array.isArray(v) ? v.filter((s): s is string => typeof s === "string") : []);
  const config = (o.Config ?? {}) as Record<string, unknown>;
  const env: Record<string, string> = {};
  for (const kv of strings(config.Env)) {
    const eq = kv.indexOf("=");
    const key = eq < 0 ? kv : kv.slice(0, eq);
    if (RUNTIME_ENV_KEY.test(key)) env[key] = eq < 0 ? "" : kv.slice(eq + 1);
  }
  return {
    imageId: o.Id,
    repoTags: strings(o.RepoTags),
    repoDigests: strings(o.RepoDigests),
    created: typeof o.Created === "string" ? o.Created : null,
    architecture: typeof o.Architecture === "string" ? o.Architecture : null,
    os: typeof o.Os === "string" ? o.Os : null,
    env: Object.fromEntries(Object.entries(env).sort(([a], [b]) => (a < b ? -1 : 1))),
  };
}

export interface ImageIdentityCheck {
  readonly configured: string;
  readonly configuredKind: ImageRef["kind"];
  /** True when the configured value pins exactly the inspected image. */
  readonly ok: boolean;
  /** The registry digest the runtime resolved for the configured repository (or the image's only digest). */
  readonly resolvedDigest: string | null;
  readonly problems: ReadonlyArray<string>;
}

function splitRepoDigest(entry: string): { repository: string; digest: string } | null {
  const at = entry.lastIndexOf("@");
  return at > 0 ? { repository: familiarRepository(entry.slice(0, at)), digest: entry.slice(at + 1) } : null;
}

/**
 * The runbook's immutable-identity rule: a configured image ID must equal `.Id`; a configured
 * `repo@sha256:…` must appear in `.RepoDigests`; a tag pins nothing.
 */
export function checkImageIdentity(configured: string, inspect: ImageInspect, host?: string): ImageIdentityCheck {
  const ref = parseImageRef(configured);
  const where = host ? ` on host ${host}` : "";
  const digests = inspect.repoDigests.map(splitRepoDigest).filter((d): d is { repository: string; digest: string } => d !== null);
  const distinct = [...new Set(digests.map((d) => d.digest))];
  const problems: string[] = [];
  let resolvedDigest: string | null = null;

  switch (ref.kind) {
    case "id":
      resolvedDigest = distinct.length === 1 ? distinct[0] : null;
      if (inspect.imageId !== ref.id) {
        problems.push(
          `runtime.image ${configured} resolves${where} to image ${inspect.imageId}; the configured image ID must equal the inspected .Id — load the pinned image or rerun discovery`,
        );
      }
      break;
    case "short-id":
      resolvedDigest = distinct.length === 1 ? distinct[0] : null;
      problems.push(`runtime.image ${configured} is a short image ID; pin the full ID ${inspect.imageId} (it matched${where})`);
      break;
    case "digest": {
      const repo = familiarRepository(ref.repository);
      const sameRepo = digests.filter((d) => d.repository === repo);
      const exact = sameRepo.find((d) => d.digest === ref.digest);
      resolvedDigest = exact?.digest ?? (sameRepo.length === 1 ? sameRepo[0].digest : null);
      if (!exact) {
        const elsewhere = digests.filter((d) => d.digest === ref.digest).map((d) => `${d.repository}@${d.digest}`);
        problems.push(
          `runtime.image ${configured}: the image${where} (${inspect.imageId}) does not list ${repo}@${ref.digest} in its RepoDigests ` +
            `(${inspect.repoDigests.length > 0 ? inspect.repoDigests.join(", ") : "none"})` +
            (elsewhere.length > 0 ? `; the digest appears only as ${elsewhere.join(", ")}` : "") +
            `; pull it by that digest (docker pull ${configured}) so the runtime resolves the configured bytes`,
        );
      }
      break;
    }
    case "tag": {
      const repo = familiarRepository(ref.repository);
      const sameRepo = digests.filter((d) => d.repository === repo);
      resolvedDigest = sameRepo.length === 1 ? sameRepo[0].digest : null;
      problems.push(
        `runtime.image ${configured} is a mutable tag; pin an image ID (sha256:…) or a digest (repo@sha256:…) — ` +
          `it resolves${where} to image ${inspect.imageId}${resolvedDigest ? ` (${repo}@${resolvedDigest})` : ""}`,
      );
      break;
    }
  }
  return { configured, configuredKind: ref.kind, ok: problems.length === 0, resolvedDigest, problems };
}

export interface DockerRuntimeIdentity extends RuntimePackages {
  readonly kind: "docker";
  /** runtime.image as configured. */
  readonly image: string;
  readonly imageId: string;
  readonly repoTags: ReadonlyArray<string>;
  readonly repoDigests: ReadonlyArray<string>;
  readonly resolvedDigest: string | null;
  readonly created: string | null;
  readonly architecture: string | null;
  readonly os: string | null;
  readonly env: Readonly<Record<string, string>>;
  readonly identity: ImageIdentityCheck;
  /** The vllm distribution's version inside the image, when its packages were read. */
  readonly vllmVersion: string | null;
}

export type RuntimeIdentity = NativeRuntimeIdentity | DockerRuntimeIdentity;

/** Combines inspect output, the identity check and the container's package list into one identity. */
export function dockerRuntimeIdentity(configured: string, inspect: ImageInspect, packages: RuntimePackages, host?: string): DockerRuntimeIdentity {
  const identity = checkImageIdentity(configured, inspect, host);
  return {
    kind: "docker",
    image: configured,
    ...inspect,
    resolvedDigest: identity.resolvedDigest,
    identity,
    ...packages,
    vllmVersion: packages.packages?.vllm ?? null,
  };
}

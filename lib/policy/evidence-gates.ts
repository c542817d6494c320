/**
 * The evidence gates the policy pack (policy/) enforces, as pure functions over a stack's resources: the
 * pack only turns the CLI's resources into `StackResource`s and reports what these return. Each gate fails
 * closed: evidence that is absent is a violation, and so is evidence bound to anything but what runs now.
 *
 * One thing is not judged here: a value this very update will measure. During a preview, a resource the
 * update creates or replaces has its measured outputs unknown (or, for a dynamic provider, absent); such
 * evidence is pending, and `pulumi up --policy-pack` judges it again on the state the update leaves.
 * A resource that has been measured (its measurement time is recorded) but lacks its digest is a violation.
 */
import { SECRET_CONFIG_KEYS } from "../config/secrets";
import { sha256Json } from "../digest";
import { textDigest } from "../router/serve";
import { UNKNOWN } from "../unknown";

/** A resource as the pack sees it: its type, URN, name and outputs (secrets already unwrapped by the CLI). */
export interface StackResource {
  readonly type: string;
  readonly urn: string;
  readonly name: string;
  readonly props: Readonly<Record<string, unknown>>;
}

export interface Violation {
  /** The resource the violation is about, when there is one. */
  readonly urn?: string;
  readonly message: string;
}

export interface PolicyOptions {
  /** Accept a router whose preflight has no failing gate but skipped some (policy config `allowDegradedPreflight`). */
  readonly allowDegradedPreflight?: boolean;
  /**
   * The stack's config file as written (`Pulumi.<stack>.yaml`'s `config`), for the secret-config gate;
   * absent when the pack could not read it, which is itself a violation.
   */
  readonly stackConfig?: { readonly path: string; readonly config: Readonly<Record<string, unknown>> } | { readonly path: string; readonly error: string };
}

export const POLICY_NAMES = ["engine-evidence", "pinned-identity", "router-after-preflight", "adopted-digests", "secret-config"] as const;
export type PolicyName = (typeof POLICY_NAMES)[number];

export const POLICY_DESCRIPTIONS: Record<PolicyName, string> = {
  "engine-evidence": "Every engine has a generation, cache capture, attestation and profile, each bound to the engine's current generation digest.",
  "pinned-identity": "Every runtime image (or native vLLM executable) is pinned by digest; every host key is pinned or was recorded on first contact.",
  "router-after-preflight": "The router runs only with a passing preflight (degraded only by policy config) of the fleet document it serves.",
  "adopted-digests": "An adopted calibration or profile store names the SHA-256 the program read.",
  "secret-config": "No secret config key of the stack holds a plain value.",
};

export const TYPES = {
  discovery: "pulumi-nodejs:dynamic/narwhal:HostDiscovery",
  imageCheck: "pulumi-nodejs:dynamic/narwhal:ImageCheck",
  generation: "pulumi-nodejs:dynamic/narwhal:EngineGeneration",
  cache: "pulumi-nodejs:dynamic/narwhal:CacheCapture",
  attestation: "pulumi-nodejs:dynamic/narwhal:Attestation",
  profile: "pulumi-nodejs:dynamic/narwhal:Profile",
  profileStore: "pulumi-nodejs:dynamic/narwhal:ProfileStore",
  preflight: "pulumi-nodejs:dynamic/narwhal:Preflight",
  calibration: "pulumi-nodejs:dynamic/narwhal:Calibration",
  command: "command:remote:Command",
  nodejsProvider: "pulumi:providers:pulumi-nodejs",
} as const;

/** The values @pulumi/policy (and the engine) use for a value not known until the update runs: the engine's string sentinel and @pulumi/policy's own, one per kind. */
export const UNKNOWN_VALUES: ReadonlySet<string> = new Set([
  UNKNOWN,
  "1c4a061d-8072-4f0a-a4cb-0ff528b18fe7",
  "3eeb2bf0-c639-47a8-9e75-3b44932eb421",
  "6a19a0b0-7e62-4c92-b797-7f8e31da9cc2",
  "030794c1-ac77-496b-92df-f27374a8bd58",
  "e48ece36-62e2-4504-bad9-02848725956a",
  "dd056dcd-154b-4c76-9bd3-c8f88648b5ff",
]);

const DIGEST = /^sha256:[0-9a-f]{64}$/;
const PINNED_IMAGE = /^(?:sha256:[0-9a-f]{64}|[^\s@]+@sha256:[0-9a-f]{64})$/;

const isUnknown = (v: unknown): boolean => typeof v === "string" && UNKNOWN_VALUES.has(v);
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === "string" && !isUnknown(v) ? v : undefined);

/** Whether any value inside `v` is unknown: the resource is being created or replaced by this update. */
function holdsUnknown(v: unknown): boolean {
  if (isUnknown(v)) return true;
  if (Array.isArray(v)) return v.some(holdsUnknown);
  if (isObject(v)) return Object.values(v).some(holdsUnknown);
  return false;
}

/**
 * A digest output: the value, or "pending" when this update measures it (unknown, or absent before the
 * resource was ever measured), or "missing" when the resource was measured (`measuredKey` recorded) without it.
 */
function digestOf(r: StackResource, key: string, measuredKey: string): string {
  const v = r.props[key];
  if (isUnknown(v)) return "pending";
  if (typeof v === "string" && v !== "") return v;
  const measured = r.props[measuredKey];
  return measured === undefined || isUnknown(measured) ? "pending" : "missing";
}

const shortUrn = (r: StackResource): string => `${r.type.split(":").pop()} ${r.name}`;

function engineIdOf(r: StackResource): string | undefined {
  return str(r.props["engineId"]);
}

/** The engines the stack is configured with (the dynamic provider's copy of `narwhal-fleet:engines`), when readable. */
export function configuredEngines(resources: readonly StackResource[]): string[] {
  const ids = new Set<string>();
  for (const r of resources.filter((x) => x.type === TYPES.nodejsProvider)) {
    for (const [k, v] of Object.entries(r.props)) {
      if (!k.endsWith(":engines")) continue;
      try {
        const list: unknown = typeof v === "string" ? JSON.parse(v) : v;
        if (Array.isArray(list)) for (const e of list) if (isObject(e) && typeof e["id"] === "string") ids.add(e["id"]);
      } catch {
        // Not JSON: the engines seen in evidence still count.
      }
    }
  }
  return [...ids];
}

/** Every engine the stack knows of: configured, or named by any evidence resource. */
export function engineIds(resources: readonly StackResource[]): string[] {
  const ids = new Set(configuredEngines(resources));
  const kinds: string[] = [TYPES.imageCheck, TYPES.generation, TYPES.cache, TYPES.attestation, TYPES.profile];
  for (const r of resources) if (kinds.includes(r.type)) {
    const id = engineIdOf(r);
    if (id) ids.add(id);
  }
  return [...ids].sort();
}

const EVIDENCE_KINDS = [
  { type: TYPES.cache, what: "cache capture", measured: "capturedAt" },
  { type: TYPES.attestation, what: "attestation", measured: "attestedAt" },
  { type: TYPES.profile, what: "profile", measured: "measuredAt" },
] as const;

/** Gate: each engine's generation, and its cache capture, attestation and profile bound to that generation. */
export function engineEvidence(resources: readonly StackResource[]): Violation[] {
  const out: Violation[] = [];
  for (const id of engineIds(resources)) {
    const gens = resources.filter((r) => r.type === TYPES.generation && engineIdOf(r) === id);
    if (gens.length !== 1) {
      out.push({
        message:
          gens.length === 0
            ? `engine ${id}: no EngineGeneration in the stack: nothing proves which process serves it. Fix: run \`pulumi up\` to prove the engine's generation and re-measure its evidence.`
            : `engine ${id}: ${gens.length} EngineGenerations (${gens.map((g) => g.name).join(", ")}); exactly one must prove what serves it. Fix: remove the stale one from state and run \`pulumi up\`.`,
      });
      continue;
    }
    const gen = gens[0];
    const current = digestOf(gen, "generationDigest", "provedAt");
    if (current === "missing") {
      out.push({ urn: gen.urn, message: `engine ${id}: ${shortUrn(gen)} records no generationDigest. Fix: run \`pulumi up --refresh\` to prove the generation again.` });
      continue;
    }
    for (const kind of EVIDENCE_KINDS) {
      const found = resources.filter((r) => r.type === kind.type && engineIdOf(r) === id);
      if (found.length === 0) {
        out.push({ message: `engine ${id}: no ${kind.what} in the stack (fail closed: missing evidence is a violation). Fix: run \`pulumi up\` to measure the ${kind.what} of generation ${current === "pending" ? "(being proved)" : current}.` });
        continue;
      }
      for (const r of found) {
        const bound = digestOf(r, "generationDigest", kind.measured);
        if (bound === "pending" || current === "pending") continue;
        if (bound === "missing") {
          out.push({ urn: r.urn, message: `engine ${id}: ${kind.what} ${r.name} records no generationDigest: it is bound to no generation. Fix: run \`pulumi up\` to measure it again.` });
        } else if (bound !== current) {
          out.push({
            urn: r.urn,
            message: `engine ${id}: ${kind.what} ${r.name} is bound to generation ${bound}, but the engine's current generation is ${current} (${gen.name}). Fix: run \`pulumi up\` to re-measure it against the running process.`,
          });
        }
      }
    }
    // A profile is measured against one attestation of that generation (design: "attested generation").
    const attestations = resources.filter((r) => r.type === TYPES.attestation && engineIdOf(r) === id);
    const attested = attestations.length === 1 ? digestOf(attestations[0], "attestationDigest", "attestedAt") : "pending";
    for (const p of resources.filter((r) => r.type === TYPES.profile && engineIdOf(r) === id)) {
      const bound = p.props["attestationDigest"];
      if (attested === "pending" || attested === "missing" || typeof bound !== "string" || isUnknown(bound) || bound === attested) continue;
      out.push({
        urn: p.urn,
        message: `engine ${id}: profile ${p.name} was measured under attestation ${bound}, but the engine's attestation is ${attested} (${attestations[0].name}). Fix: run \`pulumi up\` to profile the engine again under its current attestation.`,
      });
    }
  }
  return out;
}

/** Gate: runtimes pinned by digest, host keys pinned or recorded on first contact. */
export function pinnedIdentity(resources: readonly StackResource[]): Violation[] {
  const out: Violation[] = [];
  for (const r of resources.filter((x) => x.type === TYPES.imageCheck)) {
    if (holdsUnknown(r.props["runtime"])) continue;
    const id = engineIdOf(r) ?? r.name;
    const runtime = isObject(r.props["runtime"]) ? r.props["runtime"] : undefined;
    if (!runtime) {
      out.push({ urn: r.urn, message: `engine ${id}: image check ${r.name} records no runtime, so nothing says what was checked. Fix: run \`pulumi up\` to check the runtime again.` });
      continue;
    }
    if (runtime["kind"] === "docker") {
      const image = str(runtime["image"]) ?? "";
      if (!PINNED_IMAGE.test(image)) {
        out.push({ urn: r.urn, message: `engine ${id}: image check ${r.name} checked image ${JSON.stringify(image)}, which is not pinned by digest. Fix: set narwhal-fleet:runtime.image to \`sha256:<64 hex>\` or \`<repo>@sha256:<64 hex>\` and run \`pulumi up\`.` });
      }
    } else if (isObject(r.props["identity"])) {
      const sha = (r.props["identity"])["sha256"];
      if (!isUnknown(sha) && !(typeof sha === "string" && DIGEST.test(sha))) {
        out.push({ urn: r.urn, message: `engine ${id}: image check ${r.name} records no SHA-256 of the native vLLM executable it checked. Fix: make the executable readable on the host and run \`pulumi up --refresh\`.` });
      }
    } else if (str(r.props["checkedAt"]) !== undefined) {
      out.push({ urn: r.urn, message: `engine ${id}: image check ${r.name} records no runtime identity. Fix: run \`pulumi up\` to check the runtime again.` });
    }
  }
  for (const r of resources.filter((x) => x.type === TYPES.discovery)) {
    const alias = str(r.props["alias"]) ?? r.name;
    const runtimeRef = r.props["runtimeRef"];
    if (isObject(runtimeRef) && runtimeRef["kind"] === "docker" && !holdsUnknown(runtimeRef)) {
      const image = str(runtimeRef["image"]) ?? "";
      if (!PINNED_IMAGE.test(image)) {
        out.push({ urn: r.urn, message: `host ${alias}: discovery ${r.name} probed image ${JSON.stringify(image)}, which is not pinned by digest. Fix: set narwhal-fleet:runtime.image to \`sha256:<64 hex>\` or \`<repo>@sha256:<64 hex>\` and run \`pulumi up\`.` });
      }
    }
    if (str(r.props["pinnedHostKey"])) continue;
    const recorded = r.props["hostKey"];
    if (isUnknown(recorded) || (recorded === undefined && r.props["hostname"] === undefined)) continue; // discovered by this update
    if (r.props["allowFirstContact"] !== true) {
      out.push({ urn: r.urn, message: `host ${alias}: discovery ${r.name} has no pinned host key and first contact is not allowed. Fix: pin the host's key (narwhal-fleet:hosts[].hostKey, from \`ssh-keyscan\`) and run \`pulumi up\`.` });
    } else if (!(typeof recorded === "string" && recorded !== "") || !str(r.props["hostKeyFingerprint"])) {
      out.push({ urn: r.urn, message: `host ${alias}: discovery ${r.name} neither pins a host key nor recorded the one presented on first contact. Fix: pin the host's key (narwhal-fleet:hosts[].hostKey) and run \`pulumi up --refresh\`.` });
    }
  }
  return out;
}

/** The fleet document text the router's start command writes (`printf '%s\n' '<doc>' > "$run/fleet.json.tmp"`). */
export function routerDocumentText(create: string): string | undefined {
  const m = /printf '%s\\n' ('(?:[^']|'\\'')*') > "\$run\/fleet\.json\.tmp"/.exec(create);
  return m ? m[1].slice(1, -1).replace(/'\\''/g, "'") : undefined;
}

/** The preflight's overall verdict: fail on any failing gate, degraded when some gate only skipped, pass otherwise. */
export function preflightVerdict(gates: unknown): "pass" | "degraded" | "fail" | "none" {
  if (!Array.isArray(gates) || gates.length === 0) return "none";
  const verdicts = gates.map((g) => (isObject(g) ? g["verdict"] : undefined));
  if (verdicts.some((v) => v !== "pass" && v !== "skip")) return "fail";
  return verdicts.includes("skip") ? "degraded" : "pass";
}

/** Gate G: the router serves only a document a passing preflight ran against. */
export function routerAfterPreflight(resources: readonly StackResource[], opts: PolicyOptions = {}): Violation[] {
  const routers = resources.filter((r) => r.type === TYPES.command && r.name.endsWith("-router-process"));
  if (routers.length === 0) return [];
  const preflights = resources.filter((r) => r.type === TYPES.preflight);
  const out: Violation[] = [];
  for (const router of routers) {
    // A router with no start command is one a targeted update skips creating: no router runs.
    if (router.props["create"] === undefined) continue;
    if (preflights.length !== 1) {
      out.push({
        urn: router.urn,
        message:
          preflights.length === 0
            ? `router ${router.name} runs without a preflight in the stack (fail closed: missing evidence is a violation). Fix: run \`pulumi up\` so the preflight runs before the router.`
            : `router ${router.name}: ${preflights.length} preflights in the stack; exactly one must judge the document it serves. Fix: remove the stale one from state and run \`pulumi up\`.`,
      });
      continue;
    }
    const create = router.props["create"];
    if (holdsUnknown(create)) continue; // this update starts it
    const pf = preflights[0];
    const text = typeof create === "string" ? routerDocumentText(create) : undefined;
    const triggers = Array.isArray(router.props["triggers"]) ? (router.props["triggers"] as unknown[]) : [];
    if (text === undefined || (str(triggers[0]) !== undefined && textDigest(text) !== triggers[0])) {
      out.push({ urn: router.urn, message: `router ${router.name}: its start command holds no fleet document matching its recorded digest ${String(triggers[0])}. Fix: run \`pulumi up\` to restart the router from the stack's document.` });
      continue;
    }
    let served: string;
    try {
      served = sha256Json(JSON.parse(text));
    } catch {
      out.push({ urn: router.urn, message: `router ${router.name}: the fleet document in its start command is not JSON. Fix: run \`pulumi up\` to restart the router from the stack's document.` });
      continue;
    }
    const judged = digestOf(pf, "fleetDocumentDigest", "ranAt");
    if (judged === "pending") continue;
    if (judged === "missing") {
      out.push({ urn: pf.urn, message: `router ${router.name}: preflight ${pf.name} records no fleetDocumentDigest, so it judged no known document. Fix: run \`pulumi up\` to run the preflight again.` });
      continue;
    }
    if (judged !== served) {
      out.push({ urn: router.urn, message: `router ${router.name} serves fleet document ${served}, but preflight ${pf.name} judged ${judged}. Fix: run \`pulumi up\` so the preflight judges the current document before the router restarts.` });
      continue;
    }
    const gates = pf.props["gates"];
    if (holdsUnknown(gates)) continue;
    const verdict = preflightVerdict(gates);
    if (verdict === "pass" || (verdict === "degraded" && opts.allowDegradedPreflight)) continue;
    const failing = Array.isArray(gates) ? gates.filter((g) => isObject(g) && g["verdict"] !== "pass").map((g) => `${String((g as Record<string, unknown>)["gate"])}=${String((g as Record<string, unknown>)["verdict"])}`) : [];
    out.push({
      urn: router.urn,
      message:
        verdict === "none"
          ? `router ${router.name}: preflight ${pf.name} records no gate verdicts. Fix: run \`pulumi up\` to run the preflight again.`
          : verdict === "degraded"
            ? `router ${router.name}: preflight ${pf.name} is degraded (${failing.join(", ")}). Fix: make every gate pass and run \`pulumi up\`, or accept a degraded preflight with the policy config allowDegradedPreflight: true.`
            : `router ${router.name}: preflight ${pf.name} failed (${failing.join(", ")}). Fix: resolve the failing gates (see the preflight's evidence record) and run \`pulumi up\`.`,
    });
  }
  return out;
}

/**
 * What a profile or calibration adopted (its recorded adoption's source) or was told to adopt (its `adopt`
 * input); undefined when it adopts nothing, or when a preview does not know yet.
 */
function adoptedSource(r: StackResource): { adopted: boolean; source: unknown } | undefined {
  const adoption = r.props["adoption"];
  const adopt = r.props["adopt"];
  if (holdsUnknown(adoption) || holdsUnknown(adopt)) return undefined;
  const adopted = isObject(adoption) && adoption["verdict"] === "adopted";
  if (!adopted && !isObject(adopt)) return undefined;
  return { adopted, source: adopted && isObject(adoption["source"]) ? adoption["source"] : adopt };
}

/** Gate: whatever was adopted instead of measured names the digest the program read it with. */
export function adoptedDigests(resources: readonly StackResource[]): Violation[] {
  const out: Violation[] = [];
  for (const r of resources.filter((x) => x.type === TYPES.profile)) {
    const id = engineIdOf(r) ?? r.name;
    const found = adoptedSource(r);
    if (!found) continue;
    const { adopted, source } = found;
    const sha = isObject(source) ? source["storeSha256"] : undefined;
    if (!(typeof sha === "string" && DIGEST.test(sha))) {
      out.push({ urn: r.urn, message: `engine ${id}: profile ${r.name} ${adopted ? "adopted" : "names"} a profile store${isObject(source) && typeof source["storePath"] === "string" ? ` (${source["storePath"]})` : ""} without its SHA-256. Fix: set narwhal-fleet:profiling.adopt.sha256 to the store's \`sha256:<hex>\` and run \`pulumi up\`.` });
    }
  }
  for (const r of resources.filter((x) => x.type === TYPES.calibration)) {
    const found = adoptedSource(r);
    if (!found) continue;
    const { adopted, source } = found;
    const sha = isObject(source) ? source["sha256"] : undefined;
    if (!(typeof sha === "string" && DIGEST.test(sha))) {
      out.push({ urn: r.urn, message: `calibration ${r.name} ${adopted ? "adopted" : "names"} a calibration file${isObject(source) && typeof source["path"] === "string" ? ` (${source["path"]})` : ""} without its SHA-256. Fix: set narwhal-fleet:calibration.adopt.sha256 to the file's \`sha256:<hex>\` and run \`pulumi up\`.` });
    }
  }
  return out;
}

/** Whether a config value is stored encrypted throughout: `{secure: ...}`, or an object whose every leaf is. */
function isSecure(v: unknown): boolean {
  if (isObject(v)) {
    if (typeof v["secure"] === "string" && Object.keys(v).length === 1) return true;
    const values = Object.values(v);
    return values.length > 0 && values.every(isSecure);
  }
  return false;
}

/** Gate: the stack file stores every secret key encrypted. */
export function secretConfig(opts: PolicyOptions): Violation[] {
  const file = opts.stackConfig;
  if (!file) return [{ message: "secret config: the policy pack could not locate the stack's config file, so it cannot tell whether secrets are encrypted. Fix: run the pack from the project folder (`pulumi preview --policy-pack policy`)." }];
  if ("error" in file) return [{ message: `secret config: ${file.path} could not be read (${file.error}). Fix: make the stack file readable and run again.` }];
  const out: Violation[] = [];
  for (const [fullKey, value] of Object.entries(file.config)) {
    const key = fullKey.includes(":") ? fullKey.slice(fullKey.indexOf(":") + 1) : fullKey;
    if (!(SECRET_CONFIG_KEYS as readonly string[]).includes(key) || isSecure(value)) continue;
    out.push({ message: `secret config: ${fullKey} in ${file.path} holds a plain value. Fix: \`pulumi config set --secret ${key} <value>\` (for an object key, \`--secret --path '${key}.<name>'\` for each entry), then rotate the value that was stored in plaintext.` });
  }
  return out;
}

/** Runs one gate. */
export function judge(policy: PolicyName, resources: readonly StackResource[], opts: PolicyOptions = {}): Violation[] {
  switch (policy) {
    case "engine-evidence":
      return engineEvidence(resources);
    case "pinned-identity":
      return pinnedIdentity(resources);
    case "router-after-preflight":
      return routerAfterPreflight(resources, opts);
    case "adopted-digests":
      return adoptedDigests(resources);
    case "secret-config":
      return secretConfig(opts);
  }
}

/** The stack's name from its root resource's URN (`urn:pulumi:<stack>::<project>::pulumi:pulumi:Stack::...`). */
export function stackNameOf(resources: readonly StackResource[]): string | undefined {
  const root = resources.find((r) => r.type === "pulumi:pulumi:Stack");
  return root ? /^urn:pulumi:([^:]+)::/.exec(root.urn)?.[1] : undefined;
}

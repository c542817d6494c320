/**
 * Gate C's live-process proof, as the runbook's PY_ENGINE probe runs it: `/health` 200, `/version` equal
 * to the checked image's `vllm_api_version`, the served model in `/v1/models`, `process_start_time_seconds`
 * in `/metrics`, and one deterministic 32-token temperature-0 completion with text. The result is bound to
 * the process by the generation digest; a refresh re-probes cheaply (health, metrics, version) and says
 * whether the live process is still the proved one.
 *
 * No I/O happens here: every request goes through an {@link Ask} the caller supplies (the provider's is
 * undici; the unit tests replay recorded replies).
 */
import { sha256Json } from "../digest";
import { EngineError } from "./errors";
import { parsePrometheusText, processStartTime } from "./prometheus";

/** Who owns the endpoint: the runtime the engine was started as (exactly one of pid or containerId). */
export interface ProcessIdentity {
  readonly hostAlias: string;
  readonly pid?: number;
  readonly containerId?: string;
}

/** The engine a probe is about; every message starts with it. */
export interface ProofSubject {
  readonly engineId: string;
  readonly hostAlias: string;
  /** Base URL of the engine's OpenAI server, e.g. `http://10.0.0.5:8100`. */
  readonly url: string;
  readonly processIdentity: ProcessIdentity;
}

export interface Reply {
  readonly status: number;
  readonly body: string;
}

/**
 * One HTTP request to the engine: GET without a body, POST (JSON) with one. It resolves with whatever
 * the engine answered and rejects (an {@link EngineError} `NARWHAL_ENGINE_HTTP` with `reason`) only when
 * no answer came.
 */
export type Ask = (path: string, body?: unknown, options?: { timeoutS?: number }) => Promise<Reply>;

/** The runbook's completion: deterministic (temperature 0), 32 tokens. */
export const PROOF_PROMPT = "The sea is";
export const PROOF_MAX_TOKENS = 32;

export function subjectName(s: { engineId: string; hostAlias: string }): string {
  return `engine ${s.engineId} on host ${s.hostAlias}`;
}

export function endpoint(s: { url: string }, path: string): string {
  return s.url.replace(/\/+$/, "") + path;
}

/** `pid 4242 on host h1` or `container 0123456789ab on host h1` (Docker's short id). */
export function describeOwner(id: ProcessIdentity): string {
  const who = id.containerId !== undefined ? `container ${id.containerId.slice(0, 12)}` : `pid ${id.pid}`;
  return `${who} on host ${id.hostAlias}`;
}

/** Why a value is not a usable {@link ProcessIdentity}, or undefined when it is one. */
export function processIdentityProblem(id: unknown): string | undefined {
  if (typeof id !== "object" || id === null || Array.isArray(id)) return "expected {hostAlias, pid} or {hostAlias, containerId}";
  const { hostAlias, pid, containerId } = id as Record<string, unknown>;
  if (typeof hostAlias !== "string" || hostAlias === "") return "hostAlias must be a non-empty string";
  if ((pid === undefined) === (containerId === undefined)) return "exactly one of pid or containerId must be set";
  if (pid !== undefined && !(typeof pid === "number" && Number.isInteger(pid) && pid > 0)) return `pid must be a positive integer, got ${JSON.stringify(pid)}`;
  if (containerId !== undefined && !(typeof containerId === "string" && /^[0-9a-f]{12,64}$/.test(containerId))) {
    return `containerId must be a Docker container id (12-64 lowercase hex digits), got ${JSON.stringify(containerId)}`;
  }
  return undefined;
}

export interface GenerationFacts {
  readonly processStartTime: number;
  readonly processIdentity: ProcessIdentity;
  readonly version: string;
  readonly planSha256: string;
}

/**
 * `sha256:` over the canonical JSON of {processStartTime, pid or containerId, version, planSha256}: one
 * process, started once, of the checked version, running the plan. A restart (same pid or not) moves
 * processStartTime and so the digest.
 */
export function generationDigest(g: GenerationFacts): string {
  const owner = g.processIdentity.containerId !== undefined ? { containerId: g.processIdentity.containerId } : { pid: g.processIdentity.pid };
  return sha256Json({ processStartTime: g.processStartTime, ...owner, version: g.version, planSha256: g.planSha256 });
}

/** How a failed request reads in a message: "connection refused (ECONNREFUSED)", "no answer within 5 s". */
export function describeNetworkFailure(err: unknown, timeoutS: number): string {
  const e = err as { name?: string; code?: string; message?: string; cause?: { code?: string } };
  const code = e?.code ?? e?.cause?.code;
  if (e?.name === "TimeoutError" || e?.name === "AbortError" || (typeof code === "string" && /^UND_ERR_(HEADERS|BODY|CONNECT)_TIMEOUT$/.test(code))) {
    return `no answer within ${timeoutS} s`;
  }
  if (code === "ECONNREFUSED") return "connection refused (ECONNREFUSED)";
  if (code === "ECONNRESET" || code === "UND_ERR_SOCKET") return `connection closed by the engine (${code})`;
  if (code === "EHOSTUNREACH" || code === "ENETUNREACH" || code === "ENOTFOUND" || code === "EAI_AGAIN") return `host not reachable (${code})`;
  return typeof code === "string" ? `${e.message ?? "request failed"} (${code})` : (e?.message ?? String(err));
}

/** The error an {@link Ask} throws when no answer came. */
export function httpFailure(s: ProofSubject, path: string, method: string, err: unknown, timeoutS: number): EngineError {
  const reason = describeNetworkFailure(err, timeoutS);
  return new EngineError("NARWHAL_ENGINE_HTTP", `${subjectName(s)}: ${method} ${endpoint(s, path)} failed: ${reason}`, reason);
}

function snippet(body: string): string {
  const t = body.trim();
  return t === "" ? "(empty body)" : JSON.stringify(t.length > 200 ? t.slice(0, 200) + "..." : t);
}

/** A 200 or the runbook's verdict on it: 401 names the API key, anything else the status and body. */
export function expectOk(s: ProofSubject, path: string, method: string, reply: Reply): void {
  if (reply.status === 200) return;
  if (reply.status === 401) {
    throw new EngineError(
      "NARWHAL_ENGINE_UNAUTHORIZED",
      `${subjectName(s)}: ${method} ${endpoint(s, path)} answered 401 Unauthorized: the engine refused the API key sent as ` +
        "Bearer (or none was sent); set the engine API key it was started with",
    );
  }
  throw new EngineError("NARWHAL_ENGINE_RESPONSE", `${subjectName(s)}: ${method} ${endpoint(s, path)} answered HTTP ${reply.status}: ${snippet(reply.body)}`);
}

function json(s: ProofSubject, path: string, method: string, reply: Reply): unknown {
  expectOk(s, path, method, reply);
  try {
    return JSON.parse(reply.body);
  } catch {
    throw new EngineError("NARWHAL_ENGINE_RESPONSE", `${subjectName(s)}: ${method} ${endpoint(s, path)} did not answer JSON: ${snippet(reply.body)}`);
  }
}

/** `/version`'s `version` field. */
export function versionFrom(s: ProofSubject, reply: Reply): string {
  const body = json(s, "/version", "GET", reply) as { version?: unknown } | null;
  if (typeof body?.version !== "string" || body.version === "") {
    throw new EngineError("NARWHAL_ENGINE_RESPONSE", `${subjectName(s)}: GET ${endpoint(s, "/version")} has no "version" string: ${snippet(reply.body)}`);
  }
  return body.version;
}

/** The runbook's assertion, with its remedy: find who owns the endpoint before anything else. */
export function checkVersion(s: ProofSubject, version: string, expected: string): void {
  if (version === expected) return;
  throw new EngineError(
    "NARWHAL_ENGINE_VERSION",
    `${subjectName(s)}: /version at ${s.url} returned ${JSON.stringify(version)}; the checked image expects ${JSON.stringify(expected)}. ` +
      `The endpoint is recorded as owned by ${describeOwner(s.processIdentity)}: check which process or container owns the port ` +
      "(ss -ltnp, docker ps) and compare it with the recorded image and container ID; after the repair the proof is taken anew.",
  );
}

/** The model ids `/v1/models` lists; throws unless `servedName` is one of them. */
export function checkServedModel(s: ProofSubject, reply: Reply, servedName: string): string[] {
  const body = json(s, "/v1/models", "GET", reply) as { data?: unknown } | null;
  const cards = Array.isArray(body?.data) ? (body.data as Array<{ id?: unknown }>) : undefined;
  if (!cards) throw new EngineError("NARWHAL_ENGINE_RESPONSE", `${subjectName(s)}: GET ${endpoint(s, "/v1/models")} has no "data" list: ${snippet(reply.body)}`);
  const ids = cards.map((c) => c?.id).filter((id): id is string => typeof id === "string");
  if (!ids.includes(servedName)) {
    throw new EngineError(
      "NARWHAL_ENGINE_MODEL",
      `${subjectName(s)}: /v1/models at ${s.url} lists ${ids.length ? ids.map((i) => JSON.stringify(i)).join(", ") : "no model"}, ` +
        `not the served model ${JSON.stringify(servedName)}; check --served-model-name in the launch plan`,
    );
  }
  return ids;
}

/** `process_start_time_seconds` from a `/metrics` reply; throws when the series is absent. */
export function processStartFrom(s: ProofSubject, reply: Reply): number {
  expectOk(s, "/metrics", "GET", reply);
  const start = processStartTime(parsePrometheusText(reply.body));
  if (start === undefined) {
    throw new EngineError(
      "NARWHAL_ENGINE_PROCESS_START",
      `${subjectName(s)}: /metrics at ${s.url} has no process_start_time_seconds, so the live process cannot be identified; ` +
        "vLLM drops the process_* series with --api-server-count > 1 (multiprocess Prometheus): run one API server",
    );
  }
  return start;
}

export function completionRequest(servedName: string): { model: string; prompt: string; max_tokens: number; temperature: number } {
  return { model: servedName, prompt: PROOF_PROMPT, max_tokens: PROOF_MAX_TOKENS, temperature: 0 };
}

/** `choices[0].text`, which must be non-empty. */
export function checkCompletion(s: ProofSubject, reply: Reply): string {
  const body = json(s, "/v1/completions", "POST", reply) as { choices?: Array<{ text?: unknown }> } | null;
  const text = Array.isArray(body?.choices) ? body.choices[0]?.text : undefined;
  if (typeof text !== "string" || text === "") {
    throw new EngineError(
      "NARWHAL_ENGINE_COMPLETION",
      `${subjectName(s)}: the ${PROOF_MAX_TOKENS}-token temperature-0 completion at ${s.url} returned no text: ${snippet(reply.body)}`,
    );
  }
  return text;
}

export interface Clock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

export const realClock: Clock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

/** Pause between two `/health` attempts of the bounded wait. */
export const HEALTH_POLL_MS = 250;
/** Longest single `/health` attempt inside the wait. */
export const HEALTH_ATTEMPT_S = 5;

/**
 * Polls `/health` until it answers 200 or `timeoutS` has passed. An engine that is still loading refuses
 * connections; a dead one answers 503. The error names the engine, its host, the wait and the last answer.
 */
export async function waitForHealth(ask: Ask, s: ProofSubject, timeoutS: number, clock: Clock = realClock): Promise<void> {
  const deadline = clock.now() + timeoutS * 1000;
  let last = "no attempt";
  for (;;) {
    const remainingS = (deadline - clock.now()) / 1000;
    if (remainingS <= 0) break;
    try {
      const reply = await ask("/health", undefined, { timeoutS: Math.min(HEALTH_ATTEMPT_S, remainingS) });
      if (reply.status === 200) return;
      last = `HTTP ${reply.status}${reply.status === 503 || reply.status === 500 ? " (the engine is dead)" : ""}`;
    } catch (err) {
      last = (err as EngineError).reason ?? (err as Error).message;
    }
    if (clock.now() + HEALTH_POLL_MS >= deadline) break;
    await clock.sleep(HEALTH_POLL_MS);
  }
  throw new EngineError(
    "NARWHAL_ENGINE_NOT_HEALTHY",
    `${subjectName(s)}: /health at ${s.url} did not answer 200 within ${timeoutS} s (last: ${last}); no proof was taken. ` +
      `Check that the engine runs (${describeOwner(s.processIdentity)}) and read its log for the cause.`,
    last,
  );
}

export interface ProofExpectations {
  /** `vllm_api_version` from the image check. */
  readonly version: string;
  readonly servedName: string;
  readonly planSha256: string;
}

export interface LiveProof {
  readonly processStartTime: number;
  readonly version: string;
  readonly servedModels: string[];
  readonly completionText: string;
  readonly generationDigest: string;
}

/** The runbook's probe, in its order; the first failed check throws and nothing after it runs. */
export async function proveLiveProcess(ask: Ask, s: ProofSubject, expected: ProofExpectations): Promise<LiveProof> {
  expectOk(s, "/health", "GET", await ask("/health"));
  const version = versionFrom(s, await ask("/version"));
  checkVersion(s, version, expected.version);
  const servedModels = checkServedModel(s, await ask("/v1/models"), expected.servedName);
  const start = processStartFrom(s, await ask("/metrics"));
  const completionText = checkCompletion(s, await ask("/v1/completions", completionRequest(expected.servedName)));
  return {
    processStartTime: start,
    version,
    servedModels,
    completionText,
    generationDigest: generationDigest({ processStartTime: start, processIdentity: s.processIdentity, version, planSha256: expected.planSha256 }),
  };
}

/**
 * What a refresh saw, relative to the recorded proof:
 * - `proved`: the proved process still serves (same digest);
 * - `restarted`: another process start time (a restart, a new container, another process on the port);
 * - `version-changed`: same start time, another `/version`;
 * - `mismatch`: same start time and version, yet another digest (the recorded digest disagrees with its own facts);
 * - `dead`: `/health` answers but not 200 (vLLM: 503 after EngineDeadError);
 * - `unreachable`: no answer at all;
 * - `unidentified`: it answers, but `/metrics` or `/version` do not identify it.
 */
export type ObservedState = "proved" | "restarted" | "version-changed" | "mismatch" | "dead" | "unreachable" | "unidentified";

export interface GenerationObservation {
  /** The live generation digest, or "none" when no live process could be identified. */
  readonly observedGeneration: string;
  readonly observedState: ObservedState;
  readonly observedDetail: string;
}

export interface RecordedGeneration {
  readonly generationDigest: string;
  readonly processStartTime: number;
  readonly version: string;
  readonly planSha256: string;
}

/** The cheap re-probe of a refresh: `/health`, `/metrics` process_start_time_seconds, `/version`. Never throws. */
export async function observeGeneration(ask: Ask, s: ProofSubject, recorded: RecordedGeneration): Promise<GenerationObservation> {
  const none = (observedState: ObservedState, observedDetail: string): GenerationObservation => ({ observedGeneration: "none", observedState, observedDetail });
  let health: Reply;
  try {
    health = await ask("/health");
  } catch (err) {
    return none("unreachable", `/health: ${(err as EngineError).reason ?? (err as Error).message}`);
  }
  if (health.status !== 200) return none("dead", `/health answered HTTP ${health.status}`);
  let start: number;
  let version: string;
  try {
    start = processStartFrom(s, await ask("/metrics"));
    version = versionFrom(s, await ask("/version"));
  } catch (err) {
    return none("unidentified", (err as Error).message);
  }
  const observedGeneration = generationDigest({ processStartTime: start, processIdentity: s.processIdentity, version, planSha256: recorded.planSha256 });
  if (observedGeneration === recorded.generationDigest) {
    return { observedGeneration, observedState: "proved", observedDetail: `the proved process serves (process_start_time_seconds ${start})` };
  }
  if (start !== recorded.processStartTime) {
    return { observedGeneration, observedState: "restarted", observedDetail: `process_start_time_seconds ${start}, proved ${recorded.processStartTime}` };
  }
  if (version !== recorded.version) {
    return { observedGeneration, observedState: "version-changed", observedDetail: `/version ${JSON.stringify(version)}, proved ${JSON.stringify(recorded.version)}` };
  }
  return { observedGeneration, observedState: "mismatch", observedDetail: `the recorded generation digest does not match its own facts (live ${observedGeneration})` };
}

export interface LiveGeneration {
  readonly generationDigest: string;
  readonly processStartTime: number;
  readonly version: string;
}

/** The live generation, strictly: a dead or unidentifiable engine throws (used before and after a capture). */
export async function liveGeneration(ask: Ask, s: ProofSubject, planSha256: string): Promise<LiveGeneration> {
  const health = await ask("/health");
  if (health.status !== 200) {
    throw new EngineError(
      "NARWHAL_ENGINE_NOT_HEALTHY",
      `${subjectName(s)}: /health at ${s.url} answered HTTP ${health.status}${health.status === 503 ? " (the engine is dead)" : ""}; the proved process is not serving`,
      `HTTP ${health.status}`,
    );
  }
  const processStart = processStartFrom(s, await ask("/metrics"));
  const version = versionFrom(s, await ask("/version"));
  return {
    generationDigest: generationDigest({ processStartTime: processStart, processIdentity: s.processIdentity, version, planSha256 }),
    processStartTime: processStart,
    version,
  };
}

/** Throws `NARWHAL_ENGINE_RESTARTED` unless the live generation is the proved one. */
export function requireProvedGeneration(s: ProofSubject, live: LiveGeneration, provedDigest: string, what: string): void {
  if (live.generationDigest === provedDigest) return;
  throw new EngineError(
    "NARWHAL_ENGINE_RESTARTED",
    `${subjectName(s)}: the engine restarted since it was proved: the live generation at ${s.url} is ${live.generationDigest} ` +
      `(process_start_time_seconds ${live.processStartTime}, version ${JSON.stringify(live.version)}), the proved one ${provedDigest}; ` +
      `nothing was ${what}. Refresh (pulumi up --refresh) so the engine generation is proved again, then retry.`,
  );
}

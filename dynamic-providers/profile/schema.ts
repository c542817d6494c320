/** What one engine's profile is measured against, and how to reach the engine: the inputs' zod schema, their type, and the outputs. */
import { z } from "zod";
import { fitLimitsProblem, type FitLimits } from "../../lib/profiling/fit-limits";
import { sweepProblems, type Sweep } from "../../lib/profiling/sweep";
import type { AdoptSource } from "../../lib/profiling/adopt";
import type { ProfileResult } from "../../lib/profiling/engine-profile";
import type { StoredLogin } from "../../lib/ssh/stored-login";
import { aboveZero, digest, given, got, matching, seconds, text, typedAs, whole } from "../../lib/provider-fields";
import { across, inOrder, isDigest, judgedBy } from "../../lib/input-rules";

/** A digest that may be absent (an engine without an attestation). */
const digestWhenSet = (k: string) => matching(/^sha256:[0-9a-f]{64}$/, got(k, "must be sha256:<64 hex> when set")).nullish();

const launchWithAttestation = across((news, refuse) => {
  if (news.launchDigest != null && news.attestationDigest == null) refuse("launchDigest", "launchDigest comes with the attestation it is part of: set attestationDigest too");
});

const adoptSource = (a: unknown) => {
  const s = a as Record<string, unknown> | null;
  const path = (k: string) => typeof s?.[k] === "string" && s[k].startsWith("/");
  return !!s && path("storePath") && path("samplesPath") && isDigest(s.storeSha256) && isDigest(s.samplesSha256);
};

const routerLogin = (v: unknown) => {
  const via = v as Record<string, unknown> | null;
  if (!via || typeof via.host !== "string" || !via.host || !Number.isInteger(via.port) || typeof via.user !== "string" || !via.user) return "via must name the router host's login {alias, host, port, user, hostKey}";
  if (typeof via.hostKey !== "string" || !via.hostKey) return `via.hostKey: the router host ${String(via.alias)}'s verified key must be pinned`;
  return undefined;
};

const engine = z.object({
  engineId: text("engineId"),
  hostAlias: text("hostAlias"),
  servedName: text("servedName"),
  version: text("version"),
  /** The engine's private URL (the fleet document's `url`). */
  url: matching(/^http:\/\/[^/\s]+$/, got("url", "must be the engine's http://<address>:<port> base URL")),
  /** The proved process (EngineGeneration): a restarted engine is a new generation and a new profile. */
  generationDigest: digest("generationDigest"),
  /** The launch plan the engine runs (its `--max-num-seqs` is the limit below). */
  planSha256: digest("planSha256"),
  /** The verified attestation the row binds (narwhal's binding digest: launch_digest, else attestation_digest). */
  attestationDigest: digestWhenSet("attestationDigest"),
  launchDigest: digestWhenSet("launchDigest"),
});

const measurement = z.object({
  processStartTime: aboveZero(got("processStartTime", "must be a positive number")),
  sweep: typedAs<Sweep>(judgedBy((s) => (s && typeof s === "object" ? sweepProblems(s as never) : "sweep must be an object"))),
  /** The plan's max_num_seqs, bounding decode concurrency; absent when the plan leaves vLLM's default. */
  maxNumSeqs: whole(1, Number.MAX_SAFE_INTEGER, got("maxNumSeqs", "must be a positive integer (the plan's --max-num-seqs)")).optional(),
  /** Timeout of one probe (health, tokenize, metrics), and of one completion or decode cohort, seconds. */
  probeTimeoutS: seconds("probeTimeoutS"),
  requestTimeoutS: seconds("requestTimeoutS"),
  /**
   * The preflight's profile-validation limits (Narwhal's defaults unless the fleet document sets them):
   * a row over them is never accepted. Absent in state written before the limits were an input.
   */
  fitLimits: typedAs<FitLimits>(judgedBy(fitLimitsProblem)).optional(),
  /** Sweeps before a fit over the limits fails the create (each kept as evidence); default 3. */
  fitAttempts: whole(1, 10, got("fitAttempts", "must be an integer from 1 to 10 (profiling.fitAttempts)")).optional(),
  /**
   * A store measured before this stack (`profiling.adoptStore`) with the digests the program read:
   * create adopts this engine's row instead of measuring when it binds the live generation.
   */
  adopt: z
    .custom<AdoptSource>()
    .refine(adoptSource, { error: "adopt must name the store to adopt as {storePath, storeSha256, samplesPath, samplesSha256}: absolute paths and sha256:<64 hex> digests of the bytes read" })
    .optional(),
  /**
   * Measure from the router host through an SSH tunnel, pinned to the key discovery verified for it (the
   * key and password travel apart, as secrets); absent = from this machine.
   */
  via: typedAs<StoredLogin>(judgedBy(routerLogin)).optional(),
  viaPrivateKey: given<string>().optional(),
  viaPassword: given<string>().optional(),
  /** Secret: sent as `Authorization: Bearer`; changing it alone updates in place. */
  apiKey: given<string>().optional(),
  stack: given<string>().optional(),
});

export type ProfileInputs = z.infer<typeof engine> & z.infer<typeof measurement>;

/** ProfileInputs, in the order their refusals are reported. */
export const profileInputs = inOrder(engine, launchWithAttestation, measurement);

export type ProfileOutputs = ProfileInputs & ProfileResult;

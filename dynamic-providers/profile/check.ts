/** Profile's inputs as a zod schema: what the profile is measured against, the sweep's minimums, the limits and how to reach the engine. */
import { z } from "zod";
import { fitLimitsProblem } from "../../lib/profiling/fit-limits";
import { sweepProblems } from "../../lib/profiling/sweep";
import { across, inOrder, isDigest, judgedBy, nonEmpty, positiveNumber, positiveSeconds, sha256Digest } from "../input-rules";

/** A digest that may be absent (an engine without an attestation). */
const digestWhenSet = (k: string) => z.unknown().refine(isDigest, { error: (iss) => `${k} must be sha256:<64 hex> when set, got ${JSON.stringify(iss.input)}` }).nullish();

const launchWithAttestation = across((news, refuse) => {
  if (news.launchDigest != null && news.attestationDigest == null) refuse("launchDigest", "launchDigest comes with the attestation it is part of: set attestationDigest too");
});

const adoptSource = z
  .unknown()
  .refine(
    (a) => {
      const s = a as Record<string, unknown> | null;
      const path = (k: string) => typeof s?.[k] === "string" && s[k].startsWith("/");
      return !!s && path("storePath") && path("samplesPath") && isDigest(s.storeSha256) && isDigest(s.samplesSha256);
    },
    { error: "adopt must name the store to adopt as {storePath, storeSha256, samplesPath, samplesSha256}: absolute paths and sha256:<64 hex> digests of the bytes read" },
  )
  .optional();

const routerLogin = judgedBy((v) => {
  const via = v as Record<string, unknown> | null;
  if (!via || typeof via.host !== "string" || !via.host || !Number.isInteger(via.port) || typeof via.user !== "string" || !via.user) return "via must name the router host's login {alias, host, port, user, hostKey}";
  if (typeof via.hostKey !== "string" || !via.hostKey) return `via.hostKey: the router host ${String(via.alias)}'s verified key must be pinned`;
  return undefined;
}).optional();

/** ProfileInputs, in the order their refusals are reported. */
export const profileInputs = inOrder(
  z.looseObject({
    engineId: nonEmpty("engineId"),
    hostAlias: nonEmpty("hostAlias"),
    servedName: nonEmpty("servedName"),
    version: nonEmpty("version"),
    url: z.unknown().refine((u) => typeof u === "string" && /^http:\/\/[^/\s]+$/.test(u), { error: (iss) => `url must be the engine's http://<address>:<port> base URL, got ${JSON.stringify(iss.input)}` }),
    generationDigest: sha256Digest("generationDigest"),
    planSha256: sha256Digest("planSha256"),
    attestationDigest: digestWhenSet("attestationDigest"),
    launchDigest: digestWhenSet("launchDigest"),
  }),
  launchWithAttestation,
  z.looseObject({
    processStartTime: positiveNumber("processStartTime"),
    sweep: judgedBy((s) => (s && typeof s === "object" ? sweepProblems(s as never) : "sweep must be an object")),
    maxNumSeqs: z
      .unknown()
      .refine((m) => Number.isInteger(m) && (m as number) >= 1, { error: (iss) => `maxNumSeqs must be a positive integer (the plan's --max-num-seqs), got ${JSON.stringify(iss.input)}` })
      .optional(),
    probeTimeoutS: positiveSeconds("probeTimeoutS"),
    requestTimeoutS: positiveSeconds("requestTimeoutS"),
    fitLimits: judgedBy(fitLimitsProblem).optional(),
    fitAttempts: z
      .unknown()
      .refine((n) => Number.isInteger(n) && (n as number) >= 1 && (n as number) <= 10, { error: (iss) => `fitAttempts must be an integer from 1 to 10 (profiling.fitAttempts), got ${JSON.stringify(iss.input)}` })
      .optional(),
    adopt: adoptSource,
    via: routerLogin,
  }),
);

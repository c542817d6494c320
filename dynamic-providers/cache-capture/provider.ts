/**
 * CacheCapture provider methods, loaded at call time by resource.ts (through dynamic-providers/shim.ts).
 *
 * - create: checks that the live process is still the proved generation, reads `vllm:cache_config_info`
 *           from /metrics and the per-rank detail from the layout source, checks it against the plan
 *           and across ranks, checks the generation again, and records the layout and its digest. Any
 *           failure rejects and nothing is recorded;
 * - diff:   replaces when the generation digest (or anything else the capture was taken against)
 *           changes; the API key, alias or timeout alone update;
 * - read:   none: the capture stays valid exactly as long as its generation, which EngineGeneration's
 *           refresh watches.
 */
import type * as pulumi from "@pulumi/pulumi";
import { z } from "zod";
import { assembleCacheLayout, cacheConfigFrom, cacheLayoutDigest, type CacheLayoutSourceKind, type RankReport } from "../../lib/engine/cache-layout";
import { EngineError } from "../../lib/engine/errors";
import { endpoint, expectOk, liveGeneration, requireProvedGeneration, subjectName, type Ask, type ProofSubject } from "../../lib/engine/generation";
import { ranksFromSimLayout } from "../../lib/engine/layout-sources";
import { heldWhileStartStands } from "../diff";
import { evidenceProvider } from "../evidence-provider";
import { providerEvidence } from "../evidence";
import { REQUEST_TIMEOUT_S, withEngineHttp } from "../engine-generation/http";
import { processIdentitySchema } from "../engine-generation/check";
import { positiveInteger } from "../input-rules";
import type { CacheCaptureInputs, CacheCaptureOutputs } from "./types";

export const MEASURED_AGAINST = ["engineId", "url", "generationDigest", "planSha256", "processIdentity", "expected", "layoutSource"] as const;
export const UPDATABLE = ["apiKey", "hostAlias", "probeTimeoutS", "stack"] as const;

function subjectOf(i: CacheCaptureInputs): ProofSubject {
  return { engineId: i.engineId, hostAlias: i.hostAlias, url: i.url, processIdentity: i.processIdentity };
}

/** The simulator's layout endpoint; a real vLLM answers 404 there. */
async function simEndpointRanks(ask: Ask, s: ProofSubject): Promise<RankReport> {
  const reply = await ask("/sim/cache-layout");
  if (reply.status === 404) {
    throw new EngineError(
      "NARWHAL_CACHE_LAYOUT_SOURCE",
      `${subjectName(s)}: GET ${endpoint(s, "/sim/cache-layout")} answered 404: the "sim-endpoint" layout source exists only on the ` +
        `engine simulator; a real vLLM reports its per-rank layout in its log (layout source "engine-log")`,
    );
  }
  expectOk(s, "/sim/cache-layout", "GET", reply);
  let doc: unknown;
  try {
    doc = JSON.parse(reply.body);
  } catch {
    throw new EngineError("NARWHAL_CACHE_LAYOUT_SOURCE", `${subjectName(s)}: GET ${endpoint(s, "/sim/cache-layout")} did not answer JSON`);
  }
  try {
    return ranksFromSimLayout(doc);
  } catch (err) {
    throw new EngineError("NARWHAL_CACHE_LAYOUT_SOURCE", `${subjectName(s)}: ${(err as Error).message}`);
  }
}

/** Per-rank detail by source. Only what an HTTP session can read is wired; see lib/engine/layout-sources.ts. */
const RANK_SOURCES: Partial<Record<CacheLayoutSourceKind, (ask: Ask, s: ProofSubject) => Promise<RankReport>>> = {
  "sim-endpoint": simEndpointRanks,
};

const nonEmptyString = (k: string) => z.unknown().refine((v) => typeof v === "string" && v !== "", { error: (iss) => `${k} must be a non-empty string, got ${JSON.stringify(iss.input)}` });

/** The inputs as the check judges them; values unknown until apply are judged on the up. */
const inputs = z.object({
  processIdentity: processIdentitySchema,
  // A missing plan is refused field by field, as an empty one is.
  expected: z.preprocess(
    (e) => (typeof e === "object" && e !== null ? e : {}),
    z.object({
      blockSize: positiveInteger("expected.blockSize"),
      tensorParallelSize: positiveInteger("expected.tensorParallelSize"),
      dtype: nonEmptyString("expected.dtype"),
      kvCacheDtype: nonEmptyString("expected.kvCacheDtype"),
    }),
  ),
  layoutSource: z.enum(["sim-endpoint", "engine-log"], { error: (iss) => `layoutSource must be "sim-endpoint" or "engine-log", got ${JSON.stringify(iss.input)}` }).optional(),
});

// An update changes only how the engine is reached: the capture stands.
export const provider: pulumi.dynamic.ResourceProvider = evidenceProvider<CacheCaptureInputs, CacheCaptureOutputs>({
  measuredAgainst: MEASURED_AGAINST,
  updatable: UPDATABLE,
  inputs,
  // An explicit default must not read as a change of what the capture was taken against.
  defaults: (news) => ({ ...news, layoutSource: news.layoutSource ?? "sim-endpoint" }),
  // A start command that only runs again (a re-pinned host key) adopts this very process (../diff.ts).
  compared: (olds, news) => ({ olds, news: heldWhileStartStands<CacheCaptureInputs>(olds, news, ["processIdentity"], "processStartKey") }),

  async create(inputs) {
    const s = subjectOf(inputs);
    const source = inputs.layoutSource ?? "sim-endpoint";
    const ranksOf = RANK_SOURCES[source];
    if (!ranksOf) {
      throw new EngineError(
        "NARWHAL_CACHE_LAYOUT_SOURCE",
        `${subjectName(s)}: layout source ${JSON.stringify(source)} is not wired into the cache-capture provider: it needs the engine's ` +
          "log, which only an SSH session to the host can read (lib/engine/layout-sources.ts ranksFromEngineLog parses it)",
      );
    }
    const result = await withEngineHttp(
      s,
      inputs.apiKey,
      async (ask) => {
        requireProvedGeneration(s, await liveGeneration(ask, s, inputs.planSha256), inputs.generationDigest, "captured");
        const capturedAt = new Date().toISOString();
        const metrics = await ask("/metrics");
        expectOk(s, "/metrics", "GET", metrics);
        const config = cacheConfigFrom(s, metrics.body);
        const layout = assembleCacheLayout(s, source, config, await ranksOf(ask, s), inputs.expected);
        // The runbook checks identity before writing: a restart during the capture voids it.
        requireProvedGeneration(s, await liveGeneration(ask, s, inputs.planSha256), inputs.generationDigest, "captured");
        return { layout, capturedAt };
      },
      inputs.probeTimeoutS ?? REQUEST_TIMEOUT_S,
    );
    const digest = cacheLayoutDigest(result.layout);
    const outs: CacheCaptureOutputs = { ...inputs, layoutSource: source, layout: result.layout, cacheLayoutDigest: digest, capturedAt: result.capturedAt };
    if (inputs.stack) {
      outs.evidence = await providerEvidence(inputs.stack, [inputs.apiKey]).record({
        kind: "cache-capture",
        subject: { kind: "engine", alias: inputs.engineId },
        inputs: Object.fromEntries(MEASURED_AGAINST.map((k) => [k, outs[k]])) as never,
        commands: [],
        startedAt: result.capturedAt,
        endedAt: new Date().toISOString(),
        observations: { cacheLayoutDigest: digest, layout: result.layout } as never,
        verdict: { status: "pass", reasons: [] },
        artifacts: [],
      });
    }
    return { id: `${inputs.engineId}-cache-${digest.slice(7, 19)}`, outs };
  },
});

/**
 * CacheCapture provider methods, loaded at call time by resource.ts (through dynamic-providers/shim.ts).
 *
 * - check:  per-property problems of the inputs (values unknown during preview are let through);
 * - create: checks that the live process is still the proved generation; reads `vllm:cache_config_info`
 *           from /metrics; over the host's SSH login reads the engine's startup log (the run folder's
 *           file, or `docker logs` of its container) and the model's config.json; refuses a log that is
 *           not the serving start's whole log (for a file, its API server must be the process serving now,
 *           by its /proc start time); builds each rank's layout (lib/engine/layout-sources.ts),
 *           checks it against the plan and across ranks, checks the generation again, and records the
 *           layout, its digest and the log lines it was read from. A failure is recorded as a `fail`
 *           record with what it ran and read (../failed-attempt.ts), then rejects naming that record;
 * - diff:   replaces when the generation digest (or anything else the capture was taken against)
 *           changes; how the engine and its host are reached (API key, login, log place, model dir,
 *           timeout) and the alias alone update;
 * - read:   none: the capture stays valid exactly as long as its generation, which EngineGeneration's
 *           refresh watches.
 */
import type * as pulumi from "@pulumi/pulumi";
import { assembleCacheLayout, cacheConfigFrom, cacheLayoutDigest } from "../../lib/engine/cache-layout";
import { expectOk, liveGeneration, requireProvedGeneration, type ProofSubject } from "../../lib/engine/generation";
import { checkStartupAgainstMetrics, ranksFromEngineLog } from "../../lib/engine/layout-sources";
import { modelKvGeometry } from "../../lib/engine/model-kv";
import { withHostKeyOf } from "../../lib/ssh/host-key";
import { heldWhileStartStands } from "../../lib/evidence/diff";
import { evidenceProvider } from "../evidence-provider";
import { providerEvidence } from "../../lib/evidence/provider-evidence";
import { GATE_C_CAPTURES, captureArtifacts } from "../http-evidence";
import { HttpJournal, withHttpJournal } from "../../lib/evidence/http-journal";
import { REQUEST_TIMEOUT_S, withEngineHttp } from "../engine-http";
import { HostReader, servingLog } from "../../lib/engine/host-read";
import { capturingAsk, keepFailedAttempt, listedAttempts, newAttempt } from "../failed-attempt";
import type { KeptAttempt } from "../../lib/runtime/attempts";
import { NATIVE_ENGINE_LOG } from "../../lib/runtime/native";
import { captureInputs, MEASURED_AGAINST, UPDATABLE, type CacheCaptureInputs, type CacheCaptureOutputs, type CaptureSources } from "./schema";

function subjectOf(i: CacheCaptureInputs): ProofSubject {
  return { engineId: i.engineId, hostAlias: i.hostAlias, url: i.url, processIdentity: i.processIdentity };
}

// An update changes only how the engine is reached: the capture stands.
export const provider: pulumi.dynamic.ResourceProvider = evidenceProvider<CacheCaptureInputs, CacheCaptureOutputs>({
  measuredAgainst: MEASURED_AGAINST,
  updatable: UPDATABLE,
  inputs: captureInputs,
  // A start command that only runs again (a re-pinned host key) adopts this very process (../diff.ts), and a
  // re-pinned host key alone changes nothing here (lib/ssh/host-key.ts).
  compared: (olds, news) => ({
    olds,
    news: { ...heldWhileStartStands<CacheCaptureInputs>(olds, news, ["processIdentity"], "processStartKey"), login: withHostKeyOf(news.login, olds.login) },
  }),

  async create(inputs) {
    const s = subjectOf(inputs);
    const timeoutS = inputs.probeTimeoutS ?? REQUEST_TIMEOUT_S;
    const startedAt = new Date().toISOString();
    // What the capture ran and read is kept as it goes (its requests journalled for the record's commands);
    // a failed capture is recorded with it before it is refused.
    const attempt = newAttempt();
    const journal = new HttpJournal({ [inputs.url]: `engine ${inputs.engineId}` }, GATE_C_CAPTURES);
    const result = await withHttpJournal(journal, () => withEngineHttp(
      s,
      inputs.apiKey,
      async (direct) => {
        const ask = capturingAsk(direct, attempt);
        const live = await liveGeneration(ask, s, inputs.planSha256);
        requireProvedGeneration(s, live, inputs.generationDigest, "captured");
        const capturedAt = new Date().toISOString();
        const metrics = await ask("/metrics");
        expectOk(s, "/metrics", "GET", metrics);
        const config = cacheConfigFrom(s, metrics.body);
        const reader = await HostReader.open(inputs, timeoutS, attempt);
        let found: Awaited<ReturnType<typeof servingLog>>;
        let configJson: Buffer;
        let kept: KeptAttempt[] = [];
        try {
          found = await servingLog(reader, inputs, live.processStartTime);
          configJson = await reader.config();
          if (inputs.runDir) kept = await reader.keptAttempts(inputs.runDir);
        } finally {
          reader.close();
        }
        const { startup, origin } = found;
        checkStartupAgainstMetrics(startup, config, origin);
        const model = modelKvGeometry(configJson, inputs.expected.dtype, { host: inputs.hostAlias, dir: inputs.modelDir });
        const layout = assembleCacheLayout(s, "engine-log", config, ranksFromEngineLog(startup, model, config), inputs.expected);
        // The runbook checks identity before writing: a restart during the capture voids it.
        requireProvedGeneration(s, await liveGeneration(ask, s, inputs.planSha256), inputs.generationDigest, "captured");
        const sources: CaptureSources = {
          log: {
            source: origin.source,
            readBytes: origin.readBytes ?? 0,
            ...(origin.totalBytes !== undefined ? { totalBytes: origin.totalBytes } : {}),
            apiServerPid: startup.apiServer.pid,
            lines: [...startup.lines],
          },
          modelConfig: { path: `${inputs.modelDir.replace(/\/+$/, "")}/config.json`, sha256: `sha256:${model.configSha256}` },
        };
        return { layout, capturedAt, sources, commands: reader.commands, kept };
      },
      timeoutS,
    )).catch((err: unknown) => {
      attempt.commands.push(...journal.commands());
      return keepFailedAttempt(
        err,
        { stack: inputs.stack, secrets: [inputs.apiKey, inputs.privateKey, inputs.password], kind: "cache-capture", subject: { kind: "engine", alias: inputs.engineId }, inputs: Object.fromEntries(MEASURED_AGAINST.map((k) => [k, inputs[k] ?? null])) },
        attempt,
      );
    });
    const digest = cacheLayoutDigest(result.layout);
    const outs: CacheCaptureOutputs = { ...inputs, layout: result.layout, cacheLayoutDigest: digest, capturedAt: result.capturedAt, sources: result.sources };
    if (inputs.stack) {
      const evidence = providerEvidence(inputs.stack, [inputs.apiKey, inputs.privateKey, inputs.password]);
      // The engine's failed starts kept on its host (lib/runtime/attempts.ts) join the record of the start that served.
      const failed = await listedAttempts(evidence, "cache-capture", "engine-start", NATIVE_ENGINE_LOG, result.kept);
      outs.evidence = await evidence.record({
        kind: "cache-capture",
        subject: { kind: "engine", alias: inputs.engineId },
        inputs: Object.fromEntries(MEASURED_AGAINST.map((k) => [k, outs[k]])) as never,
        commands: [...journal.commands(), ...result.commands],
        startedAt,
        endedAt: new Date().toISOString(),
        observations: { cacheLayoutDigest: digest, layout: result.layout, sources: result.sources, failedAttempts: failed.failedAttempts } as never,
        verdict: { status: "pass", reasons: [] },
        // The engine's answers the capture read (/metrics' cache_config_info) and checked identity with, and its kept failed starts.
        artifacts: [...(await captureArtifacts(evidence, "cache-capture", journal)), ...failed.artifacts],
      });
    }
    return { id: `${inputs.engineId}-cache-${digest.slice(7, 19)}`, outs };
  },
});

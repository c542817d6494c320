/**
 * One simulated engine as Gate F meets it: proved by the EngineGeneration provider (Gate C), and the
 * Profile inputs the program builds from that proof (components/profiles.ts), for the profile provider tests.
 */
import { provider as generationProvider } from "../../../dynamic-providers/engine-generation/provider";
import type { EngineGenerationOutputs } from "../../../dynamic-providers/engine-generation/schema";
import type { ProfileInputs } from "../../../dynamic-providers/profile/schema";
import type { Sweep } from "../../../lib/profiling/sweep";
import type { SimEngine } from "../../unit/sim-engine/helpers";

/** Proves `engine` as `engineId`, served as "tiny", under `planSha256`. */
export async function provedEngine(engineId: string, engine: SimEngine, o: { apiKey: string; planSha256: string }): Promise<EngineGenerationOutputs> {
  const proof = await generationProvider.create({ engineId, hostAlias: "local", url: engine.url, apiKey: o.apiKey, processIdentity: { hostAlias: "local", pid: engine.proc.pid! }, planSha256: o.planSha256, expectedVersion: "0.29.0", servedName: "tiny", probeTimeoutS: 20 });
  return proof.outs as EngineGenerationOutputs;
}

/** The Profile inputs for a proved engine (eight sequences at most, the tests' timeouts); `extra` adds or overrides. */
export function profileInputs(engineId: string, g: EngineGenerationOutputs, o: { apiKey: string; sweep: Sweep; stack: string }, extra: Partial<ProfileInputs> = {}): ProfileInputs {
  return {
    engineId,
    hostAlias: "local",
    url: g.url,
    servedName: "tiny",
    generationDigest: g.generationDigest,
    processStartTime: g.processStartTime,
    version: g.version,
    planSha256: g.planSha256,
    sweep: o.sweep,
    maxNumSeqs: 8,
    apiKey: o.apiKey,
    probeTimeoutS: 20,
    requestTimeoutS: 60,
    stack: o.stack,
    ...extra,
  };
}

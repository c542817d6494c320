/**
 * The I/O of adopting a calibration measured before this stack: the bytes of the file `adopt` names
 * and each engine's live identity (served context, version, process start; no sample is sent), judged
 * by lib/preflight judgeCalibration.
 */
import * as fs from "node:fs";
import { documentEngines, timeoutsOf } from "../../lib/preflight/document-plan";
import { judgeCalibration, type CalibrationAdoption as Judgement } from "../../lib/preflight/calibration-adopt";
import type { EngineIdentity } from "../../lib/preflight/calibration-outcome";
import type { Pair } from "../../lib/preflight/pairs";
import { withRoutes } from "../preflight/routes";
import { httpSampler } from "../../lib/preflight/calibration-sampler";
import type { CalibrationInputs } from "./schema";

export interface AdoptionLook {
  /** The file's bytes, when it could be read. */
  bytes?: Buffer;
  identities: EngineIdentity[];
  judgement: Judgement;
}

export async function lookAtAdoption(i: CalibrationInputs, paths: Pair[], clientTtftS: number): Promise<AdoptionLook> {
  const source = i.adopt!;
  let bytes: Buffer;
  try {
    bytes = await fs.promises.readFile(source.path);
  } catch (err) {
    return { identities: [], judgement: { ok: false, mismatches: [{ field: "path", reason: `cannot read ${source.path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}` }] } };
  }
  const doc = i.fleetDocument;
  const t = timeoutsOf(doc);
  const endpoints = documentEngines(doc).map((e) => ({ iid: e.iid, url: e.url }));
  const identities = await withRoutes(i, endpoints, async (routed) => {
    const sampler = httpSampler({ engines: routed, model: i.model, apiKey: i.apiKey, timeouts: { healthS: t.healthS, prefillS: t.prefillS, tokenizeS: t.tokenizeS, observationBoundS: i.observationBoundS, requestS: t.requestS } });
    try {
      return await Promise.all(routed.map((e) => sampler.identity(e.iid)));
    } finally {
      await sampler.close();
    }
  });
  const urls = new Map(endpoints.map((e) => [e.iid, e.url]));
  const judgement = judgeCalibration(bytes, source, {
    model: i.model,
    engines: i.engines.map((e) => {
      const live = identities.find((x) => x.iid === e.engineId);
      return {
        engineId: e.engineId,
        url: urls.get(e.engineId) ?? "",
        maxModelLen: e.maxModelLen,
        attestationDigest: e.attestationDigest,
        ...(e.launchDigest ? { launchDigest: e.launchDigest } : {}),
        live: { version: live?.version ?? null, processStart: live?.processStart ?? null, maxModelLen: live?.maxModelLen ?? null },
      };
    }),
    paths,
    samplesPerGroup: i.samplesPerGroup,
    routerOverheadS: i.routerOverheadS,
    clientTtftS,
  });
  return { bytes, identities, judgement };
}

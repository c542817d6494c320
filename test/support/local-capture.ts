/**
 * Gate C's cache capture of an engine simulator on 127.0.0.1, for tests whose subject comes after it
 * (attestation, preflight): the same lib/engine steps the CacheCapture provider runs, over the engine's
 * own stdout, its /metrics and its model's config.json, read here rather than over SSH. The provider's
 * reading on a host is proved in test/providers/cache-capture.test.ts.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { assembleCacheLayout, cacheConfigFrom, cacheLayoutDigest, type CacheExpectations, type CacheLayout } from "../../lib/engine/cache-layout";
import { checkStartupAgainstMetrics, ranksFromEngineLog } from "../../lib/engine/layout-sources";
import { modelKvGeometry } from "../../lib/engine/model-kv";
import { readEngineStartup } from "../../lib/engine/startup-log";
import { http, type SimEngine } from "../unit/sim-engine/helpers";

export async function captureLocal(engineId: string, engine: SimEngine, expected: CacheExpectations): Promise<{ layout: CacheLayout; cacheLayoutDigest: string }> {
  const subject = { engineId, hostAlias: "local", url: engine.url };
  const origin = { host: "local", source: `engine ${engineId} stdout` };
  const startup = readEngineStartup(engine.stdout, origin);
  const config = cacheConfigFrom(subject, (await http(`${engine.url}/metrics`)).text);
  checkStartupAgainstMetrics(startup, config, origin);
  const model = modelKvGeometry(readFileSync(join(engine.modelDir, "config.json")), expected.dtype, { host: "local", dir: engine.modelDir });
  const layout = assembleCacheLayout(subject, "engine-log", config, ranksFromEngineLog(startup, model, config), expected);
  return { layout, cacheLayoutDigest: cacheLayoutDigest(layout) };
}

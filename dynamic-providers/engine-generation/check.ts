/** Input checks of Gate C's providers: per-property failures, with values unknown during preview let through. */
import type * as pulumi from "@pulumi/pulumi";
import { processIdentityProblem } from "../../lib/engine/generation";
import { hasUnknown } from "../diff";

// The providers that check Gate C inputs import it from here, beside the checks.
export { hasUnknown } from "../diff";

/** Per-property problems of EngineGeneration inputs; values unknown until apply are not judged. */
export function generationInputFailures(news: Record<string, unknown>): pulumi.dynamic.CheckFailure[] {
  const failures: pulumi.dynamic.CheckFailure[] = [];
  const fail = (property: string, reason: string) => failures.push({ property, reason });
  for (const k of ["engineId", "hostAlias", "planSha256", "expectedVersion", "servedName"]) {
    if (!hasUnknown(news[k]) && (typeof news[k] !== "string" || news[k] === "")) fail(k, `${k} must be a non-empty string`);
  }
  if (!hasUnknown(news.url) && !(typeof news.url === "string" && /^https?:\/\/[^/\s]+(\/\S*)?$/.test(news.url))) {
    fail("url", `url must be the engine's http(s) base URL, got ${JSON.stringify(news.url)}`);
  }
  if (!hasUnknown(news.processIdentity)) {
    const problem = processIdentityProblem(news.processIdentity);
    if (problem) fail("processIdentity", problem);
  }
  const t = news.probeTimeoutS;
  if (!hasUnknown(t) && !(typeof t === "number" && Number.isFinite(t) && t > 0)) fail("probeTimeoutS", `probeTimeoutS must be a positive number of seconds, got ${JSON.stringify(t)}`);
  if (news.apiKey !== undefined && !hasUnknown(news.apiKey) && typeof news.apiKey !== "string") fail("apiKey", "apiKey must be a string");
  return failures;
}

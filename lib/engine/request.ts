/**
 * The headers every engine client sends (the profile, preflight and calibration drivers and Gate C's
 * probes): the API key as `Authorization: Bearer` when set, and a JSON content type when a body goes
 * with the request. The providers send the request (dynamic-providers/engine-request.ts).
 */

/** What the measuring clients accept: JSON answers and the completions' event streams. */
export const MEASURE_ACCEPT = "application/json, text/event-stream, */*";
/** What Gate C's probes accept: JSON answers and `/metrics`' text exposition. */
export const PROBE_ACCEPT = "application/json, text/plain, */*";

/** `json` says a JSON body goes with the request. */
export function engineHeaders(apiKey: string | undefined, json: boolean, accept: string = MEASURE_ACCEPT): Record<string, string> {
  return {
    accept,
    ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}),
    ...(json ? { "content-type": "application/json" } : {}),
  };
}

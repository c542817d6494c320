/** The trial's reads (`/metrics`, `/health`, Prometheus' query API) as one bounded GET over undici's fetch. */
import type { HttpGet } from "./run";

export const fetchGet: HttpGet = async (url, timeoutS) => {
  try {
    const r = await fetch(url, { signal: AbortSignal.timeout(timeoutS * 1000) });
    return { status: r.status, body: await r.text() };
  } catch (e) {
    const why = (e as Error).name === "TimeoutError" ? `no answer within ${timeoutS} s` : (e as Error).message;
    throw new Error(`GET ${new URL(url).pathname}: ${why}`);
  }
};

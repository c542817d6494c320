/** The trial's reads (`/metrics`, `/health`, Prometheus' query API) as one bounded GET over undici's fetch. */
import { noteHttp } from "../evidence/http-journal";

export interface HttpReply {
  status: number;
  body: string;
}

/** A GET with a named bound; the provider supplies it over undici. */
export type HttpGet = (url: string, timeoutS: number) => Promise<HttpReply>;

export const fetchGet: HttpGet = async (url, timeoutS) => {
  const startedAt = new Date().toISOString();
  try {
    const r = await fetch(url, { signal: AbortSignal.timeout(timeoutS * 1000) });
    const body = await r.text();
    noteHttp({ method: "GET", url, status: r.status, startedAt, endedAt: new Date().toISOString() });
    return { status: r.status, body };
  } catch (e) {
    noteHttp({ method: "GET", url, status: null, startedAt, endedAt: new Date().toISOString() });
    const why = (e as Error).name === "TimeoutError" ? `no answer within ${timeoutS} s` : (e as Error).message;
    throw new Error(`GET ${new URL(url).pathname}: ${why}`);
  }
};

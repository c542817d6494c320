/**
 * One client's view of a serving router, as the demo ends with it: `/health`, `/v1/models` and one
 * completion through the router's URL. Each request has its own bounded timeout, and any failure says
 * which step and why, so a demo that stops short of a serving router fails loudly.
 */

export interface RouterSmoke {
  readonly health: unknown;
  readonly models: string[];
  readonly completion: string;
}

export interface SmokeOptions {
  /** Per request; the completion crosses a prefill and a decode engine. */
  readonly timeoutMs?: number;
  readonly prompt?: string;
}

const DEFAULT_TIMEOUT_MS = 60_000;

async function call(url: string, what: string, timeoutMs: number, init: RequestInit = {}): Promise<unknown> {
  let response: Response;
  try {
    response = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
  } catch (error) {
    const cause = (error as Error).name === "TimeoutError" ? `no answer within ${timeoutMs} ms` : (error as Error).message;
    throw new Error(`router ${what}: ${cause}`);
  }
  const text = await response.text();
  if (!response.ok) throw new Error(`router ${what}: HTTP ${response.status}: ${text.slice(0, 300)}`);
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`router ${what}: expected JSON, got ${JSON.stringify(text.slice(0, 120))}`);
  }
}

/** Asks the router at `baseUrl` for its health, its models and one completion of the first model. */
export async function routerSmoke(baseUrl: string, options: SmokeOptions = {}): Promise<RouterSmoke> {
  const base = baseUrl.replace(/\/+$/, "");
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const health = await call(`${base}/health`, "GET /health", timeoutMs);
  const listed = (await call(`${base}/v1/models`, "GET /v1/models", timeoutMs)) as { data?: Array<{ id?: unknown }> };
  const models = (listed.data ?? []).map((m) => m.id).filter((id): id is string => typeof id === "string");
  if (models.length === 0) throw new Error("router GET /v1/models: it lists no model");
  const body = JSON.stringify({ model: models[0], prompt: options.prompt ?? "Hello from the narwhal-fleet demo", max_tokens: 8, temperature: 0 });
  const done = (await call(`${base}/v1/completions`, "POST /v1/completions", timeoutMs, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
  })) as { choices?: Array<{ text?: unknown }> };
  const text = done.choices?.[0]?.text;
  if (typeof text !== "string") throw new Error("router POST /v1/completions: the answer has no choices[0].text");
  return { health, models, completion: text };
}

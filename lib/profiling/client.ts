/** What the measuring driver needs of an engine's HTTP API; the provider supplies it over undici. */
export interface Reply {
  status: number;
  body: string;
}

export interface StreamChunk {
  /** Monotonic seconds at which the bytes holding this event arrived. */
  at: number;
  event: import("./sse").SseEvent;
}

export interface EngineClient {
  /** Names the engine in every message (its id and URL, never a credential). */
  readonly label: string;
  get(path: string, timeoutS: number): Promise<Reply>;
  post(path: string, body: unknown, timeoutS: number): Promise<Reply>;
  /** POSTs and hands each server-sent event to `onChunk` as it arrives; resolves with the status once the body ends. */
  stream(path: string, body: unknown, onChunk: (c: StreamChunk) => void, timeoutS: number): Promise<{ status: number; errorBody?: string }>;
  /** Monotonic clock, seconds. */
  now(): number;
}

/**
 * What a measuring client (profile, calibration, preflight) says when a request to an engine loses its
 * connection mid-measurement: if the engine's process is gone (its `/health` refuses connections, or
 * `/metrics` shows another process start than the one measured), that, with what to do; otherwise the
 * transport error as it was. "fetch failed" or ECONNRESET alone does not tell a dead engine from a
 * dropped connection, and the fix differs (restart the engine, or look at the network).
 */

/** Transport failures that a dead engine causes: refused, reset, or closed while answering. */
const LOSS_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "UND_ERR_SOCKET", "UND_ERR_CLOSED", "ECONNABORTED"]);

interface ErrorLike {
  code?: unknown;
  message?: unknown;
  cause?: unknown;
}

/** The transport error code of `err` or of any error in its `cause` chain, or undefined. */
function lossCode(err: unknown): string | undefined {
  for (let e = err as ErrorLike | undefined, depth = 0; e && depth < 8; e = e.cause as ErrorLike | undefined, depth++) {
    if (typeof e.code === "string" && LOSS_CODES.has(e.code)) return e.code;
    // undici ends a body whose socket closed mid-stream with this message (no code on some paths).
    if (typeof e.message === "string" && /\bother side closed\b/.test(e.message)) return "UND_ERR_SOCKET";
  }
  return undefined;
}

/** Whether a request failed because its connection was refused, reset or closed, not for want of time or an answer. */
export function connectionLost(err: unknown): boolean {
  return lossCode(err) !== undefined;
}

/** How the engine is reached again once a connection was lost; each call is bounded by the client. */
export interface EngineProbe {
  /** `GET /health`'s status; rejects when no answer comes (refused, reset, timed out). */
  health(): Promise<number>;
  /** `process_start_time_seconds` from `/metrics` now, or null when the series is absent. */
  processStart(): Promise<number | null>;
}

/** Why the engine's process is taken to be gone, or null while the measured process still answers. */
export async function whyEngineGone(probe: EngineProbe, measuredStart: number | null | undefined): Promise<string | null> {
  let status: number;
  try {
    status = await probe.health();
  } catch (err) {
    const code = lossCode(err);
    if (code === undefined) return null;
    return code === "ECONNREFUSED" ? "its /health refuses connections (ECONNREFUSED)" : `its /health connection closes unanswered (${code})`;
  }
  if (status !== 200 || measuredStart === undefined || measuredStart === null) return null;
  const now = await probe.processStart().catch(() => null);
  if (now !== null && now !== measuredStart) return `another process answers now (process_start_time_seconds ${now}, the measured process started at ${measuredStart})`;
  return null;
}

export interface GoneContext {
  engineId: string;
  /** What was being measured, e.g. "profile", "calibration", "preflight transfer". */
  during: string;
  probe: EngineProbe;
  /** The process start the measurement was bound to, when known: a restarted engine is gone too. */
  processStartTime?: number | null;
}

/** Thrown in place of a transport error when the engine's process is gone; callers match on `code`. */
export class EngineGoneError extends Error {
  readonly code = "NARWHAL_ENGINE_GONE";
  constructor(
    readonly engineId: string,
    readonly during: string,
    readonly detail: string,
    readonly transport: string,
  ) {
    super(
      `engine ${engineId} process gone during ${during}: ${detail}; the request had failed with ${transport}. ` +
        "Run `pulumi up --refresh`: the refresh finds the engine down, and the up restarts it and measures it again",
    );
    this.name = "EngineGoneError";
  }
}

/**
 * The error to report for `err`: an {@link EngineGoneError} when the connection was lost and the engine's
 * process is gone, else `err` itself (a live engine's dropped connection stays a transport error).
 */
export async function classifyEngineFailure(err: unknown, c: GoneContext): Promise<unknown> {
  const code = lossCode(err);
  if (code === undefined || (err as ErrorLike)?.code === "NARWHAL_ENGINE_GONE") return err;
  const why = await whyEngineGone(c.probe, c.processStartTime);
  if (why === null) return err;
  const message = typeof (err as ErrorLike)?.message === "string" ? ((err as ErrorLike).message as string) : String(err);
  return new EngineGoneError(c.engineId, c.during, why, `${code} (${message})`);
}

/** A probe over a client's plain GET (the profile's EngineClient has one). */
export function probeOver(get: (path: string) => Promise<{ status: number; body: string }>): EngineProbe {
  return {
    health: async () => (await get("/health")).status,
    processStart: async () => {
      const r = await get("/metrics");
      const m = r.status === 200 ? /^process_start_time_seconds(?:\{[^}]*\})?\s+([0-9.eE+-]+)\s*$/m.exec(r.body) : null;
      return m ? Number(m[1]) : null;
    },
  };
}

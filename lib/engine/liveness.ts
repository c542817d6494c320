/**
 * Whether an engine the program started still serves, as a refresh sees it: the one probe that tells a
 * dead, hung or vanished engine (restart it) from a live one (never touch it). It is the same for every
 * runtime and for a host whose processes all went with a reboot, because it asks the endpoint itself.
 *
 * A live engine that is another process than the one proved (restarted by hand or by a supervisor) still
 * serves: Gate C's generation sees that, and the engine is not restarted again.
 */
import type { Ask } from "./generation";

/** `unreachable`: the host itself did not answer; nothing is restarted on a guess. */
export type LivenessState = "serving" | "down" | "unreachable";

export interface LivenessObservation {
  readonly observedState: LivenessState;
  /** What the probe saw, in the operator's words; the preview report shows it as the reason. */
  readonly observedDetail: string;
}

/** The replace key `pulumi preview` shows for an engine a refresh found not serving. */
export const NOT_SERVING = "serving";

/**
 * One bounded `/health` probe. A 200 is serving; no answer within `deadlineS` is a hung engine; a refused
 * connection is a process that is gone; any other answer is a dead engine or another server on its port.
 */
export async function observeLiveness(ask: Ask, url: string, deadlineS: number): Promise<LivenessObservation> {
  try {
    const reply = await ask("/health", undefined, { timeoutS: deadlineS });
    if (reply.status === 200) return { observedState: "serving", observedDetail: `${url}/health answered 200` };
    const why = reply.status === 503 ? "the engine reports itself dead" : "a dead engine or another server on its port";
    return { observedState: "down", observedDetail: `${url}/health answered HTTP ${reply.status} (${why})` };
  } catch (err) {
    const reason = (err as { reason?: string }).reason ?? (err as Error).message;
    if (/^host not reachable/.test(reason)) return { observedState: "unreachable", observedDetail: `${url}/health: ${reason}; check the network to the host` };
    const what = /^no answer within/.test(reason) ? "the engine hangs" : "the engine process is gone";
    return { observedState: "down", observedDetail: `${url}/health: ${reason} (${what})` };
  }
}

/** The reason a refreshed liveness record restarts its engine, or undefined while it serves. */
export function restartReason(observed: Partial<LivenessObservation>): string | undefined {
  return observed.observedState === "down" ? observed.observedDetail : undefined;
}

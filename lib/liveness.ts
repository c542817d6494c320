/**
 * Whether a service the program started (an engine, the router, Prometheus, Grafana, the freshness exporter) still serves, as a refresh
 * sees it: the one probe that tells a dead, hung or vanished process (start it again) from a live one
 * (never touch it). It is the same for every runtime and for a host whose processes all went with a
 * reboot, because it asks the endpoint itself.
 *
 * A live engine that is another process than the one proved (restarted by hand or by a supervisor) still
 * serves: Gate C's generation sees that, and the engine is not restarted again.
 */
import type { Ask } from "./engine/generation";

/** What a liveness probe watches; its words in a reason ("the router hangs"). */
export type LivenessService = "engine" | "router" | "prometheus" | "grafana" | "freshness";

/** `unreachable`: the host itself did not answer; nothing is restarted on a guess. */
export type LivenessState = "serving" | "down" | "unreachable";

export interface LivenessObservation {
  readonly observedState: LivenessState;
  /** What the probe saw, in the operator's words; the preview report shows it as the reason. */
  readonly observedDetail: string;
}

/** The replace key `pulumi preview` shows for a service a refresh found not serving. */
export const NOT_SERVING = "serving";

/** Each service's health endpoint: 200 while it serves. */
export const HEALTH_PATH: Readonly<Record<LivenessService, string>> = { engine: "/health", router: "/health", prometheus: "/-/healthy", grafana: "/api/health", freshness: "/health" };

/**
 * One bounded probe of the service's health endpoint. A 200 is serving; no answer within `deadlineS` is
 * a hung process; a refused connection is a process that is gone; any other answer is a dead service or
 * another server on its port.
 */
export async function observeLiveness(ask: Ask, url: string, deadlineS: number, service: LivenessService = "engine"): Promise<LivenessObservation> {
  const path = HEALTH_PATH[service];
  try {
    const reply = await ask(path, undefined, { timeoutS: deadlineS });
    if (reply.status === 200) return { observedState: "serving", observedDetail: `${url}${path} answered 200` };
    const why = reply.status === 503 ? `the ${service} reports itself dead` : `a dead ${service} or another server on its port`;
    return { observedState: "down", observedDetail: `${url}${path} answered HTTP ${reply.status} (${why})` };
  } catch (err) {
    const reason = (err as { reason?: string }).reason ?? (err as Error).message;
    if (/^host not reachable/.test(reason)) return { observedState: "unreachable", observedDetail: `${url}${path}: ${reason}; check the network to the host` };
    const what = /^no answer within/.test(reason) ? `the ${service} hangs` : `the ${service} process is gone`;
    return { observedState: "down", observedDetail: `${url}${path}: ${reason} (${what})` };
  }
}

/** The reason a refreshed liveness record restarts its service, or undefined while it serves. */
export function restartReason(observed: Partial<LivenessObservation>): string | undefined {
  return observed.observedState === "down" ? observed.observedDetail : undefined;
}

import type { ProfileRow } from "../../lib/profiling/store";
import type { StoredLogin } from "../../lib/ssh/stored-login";
import type { ClockAnchor, Departure, Prediction, ProfiledRange, Reconciliation, TrialPoint, TrialSlo, TrialSummary, TrialVerdict } from "../../lib/trial/types";

/** One engine as the trial sees it: the generation it must still be, its role and where the router host reaches it. */
export interface TrialEngine {
  engineId: string;
  role: "prefill" | "decode";
  hostAlias: string;
  url: string;
  generationDigest: string;
  /** The profile row the router prices this engine with (Gate F). */
  row: ProfileRow;
}

/** A host whose socket summary is kept before and after the point. */
export interface TrialHost {
  alias: string;
  login: StoredLogin;
}

export interface LoadTrialInputs {
  stack: string;
  point: TrialPoint;
  model: string;
  slo: TrialSlo;
  /** The router's private URL, reached only through an SSH local forward from the router host. */
  routerUrl: string;
  /** The serving router process: a restarted router serves another trial. */
  routerPid: number;
  routerStartedAt: string;
  /** The fleet document the router serves (its SLO, deadlines and engines). */
  fleetDocumentDigest: string;
  /** `host:port` of the stack's Prometheus as the router host reaches it; absent without observability. */
  prometheus?: string;
  scrapeIntervalS: number;
  engines: TrialEngine[];
  /** The profile store the router loaded: a new profile re-runs every point. */
  profileStoreDigest: string;
  routerHost: string;
  via: StoredLogin;
  viaPrivateKey?: string;
  viaPassword?: string;
  /** Every host of the fleet; credentials are the same per host as `hostPrivateKeys`/`hostPasswords`. */
  hosts: TrialHost[];
  hostPrivateKeys?: Record<string, string>;
  hostPasswords?: Record<string, string>;
  requestTimeoutS: number;
  drainTimeoutS: number;
  minGoodFraction: number;
  predictionBound: number;
  /** The router's overhead added to the predicted first token (`calibration.routerOverheadS`). */
  routerOverheadS: number;
}

export interface LoadTrialOutputs extends LoadTrialInputs {
  verdict: TrialVerdict;
  reasons: string[];
  summary: TrialSummary;
  prediction: Prediction;
  departure: Departure;
  range: ProfiledRange;
  reconciliation: Reconciliation;
  window: { start: ClockAnchor; end: ClockAnchor };
  evidence: { relativePath: string; digest: string };
  ranAt: string;
  wallSeconds: number;
}

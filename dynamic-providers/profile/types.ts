import type { AdoptSource } from "../../lib/profiling/adopt";
import type { FitLimits } from "../../lib/profiling/fit-limits";
import type { ProfileRow } from "../../lib/profiling/store";
import type { Sweep } from "../../lib/profiling/sweep";
import type { StoredLogin } from "../../lib/ssh/stored-login";

/** What one engine's profile is measured against, and how to reach the engine (plain inside provider calls). */
export interface ProfileInputs {
  engineId: string;
  hostAlias: string;
  /** The engine's private URL (the fleet document's `url`). */
  url: string;
  servedName: string;
  /** The proved process (EngineGeneration): a restarted engine is a new generation and a new profile. */
  generationDigest: string;
  processStartTime: number;
  version: string;
  /** The verified attestation the row binds (narwhal's binding digest: launch_digest, else attestation_digest). */
  attestationDigest?: string;
  launchDigest?: string | null;
  /** The launch plan the engine runs (its `--max-num-seqs` is the limit below). */
  planSha256: string;
  sweep: Sweep;
  /** The plan's max_num_seqs, bounding decode concurrency; absent when the plan leaves vLLM's default. */
  maxNumSeqs?: number;
  /** Secret: sent as `Authorization: Bearer`; changing it alone updates in place. */
  apiKey?: string;
  /**
   * Measure from the router host through an SSH tunnel, pinned to the key discovery verified for it (the
   * key and password travel apart, as secrets); absent = from this machine.
   */
  via?: StoredLogin;
  viaPrivateKey?: string;
  viaPassword?: string;
  /** Timeout of one probe (health, tokenize, metrics), and of one completion or decode cohort, seconds. */
  probeTimeoutS: number;
  requestTimeoutS: number;
  stack?: string;
  /**
   * The preflight's profile-validation limits (Narwhal's defaults unless the fleet document sets them):
   * a row over them is never accepted. Absent in state written before the limits were an input.
   */
  fitLimits?: FitLimits;
  /** Sweeps before a fit over the limits fails the create (each kept as evidence); default 3. */
  fitAttempts?: number;
  /**
   * A store measured before this stack (`profiling.adoptStore`) with the digests the program read:
   * create adopts this engine's row instead of measuring when it binds the live generation.
   */
  adopt?: AdoptSource;
}

/** How create came by the row: adopted from an earlier store, or measured (and, with `adopt` set, why). */
export interface ProfileAdoption {
  verdict: "adopted" | "measured";
  reason: string;
  source?: AdoptSource;
}

export interface ProfileFitErrors {
  prefillMape: number;
  prefillWorstPoint: number;
  decodeFitMape: number;
  decodeCvMape: number;
}

/** One sweep of a create: its fit errors, what the limits found wrong (nothing for the accepted one) and its record. */
export interface ProfileFitTry {
  attempt: number;
  fitErrors: ProfileFitErrors;
  problems: string[];
  evidence?: { relativePath: string; digest: string };
}

/** What create measured: never rewritten. */
export interface ProfileResult {
  /** The store row, bound to `bindingDigest`. */
  row: ProfileRow;
  /** sha256 over the row's canonical JSON: what the store and preflight bind. */
  profileDigest: string;
  bindingDigest: string;
  fitErrors: ProfileFitErrors;
  maxModelLen: number;
  /** The engine's sweep after its bounds. */
  effectiveSweep: Sweep;
  /** The sidecar entry (raw observations, fit, generation evidence) as an evidence artifact. */
  samples: { relativePath: string; sha256: string };
  evidence?: { relativePath: string; digest: string };
  measuredAt: string;
  wallSeconds: number;
  /** Every sweep create took (a fit over the preflight's limits is measured again), in order, the accepted one last, each with its evidence; empty when the row was adopted. */
  fitTries: ProfileFitTry[];
  /** Set when `adopt` was given: whether the row was adopted or measured, and why. */
  adoption?: ProfileAdoption;
}

export type ProfileOutputs = ProfileInputs & ProfileResult;

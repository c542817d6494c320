import type { ProcessIdentity } from "../../lib/engine/generation";
import type { MemberRecord, Restart } from "../../lib/engine/peer-wave";
import type { StoredLogin } from "../../lib/ssh/stored-login";

/** One engine of the KV component: where it serves, who owns it, and how to restart it on its host. */
export interface WaveMember {
  engineId: string;
  hostAlias: string;
  url: string;
  /** From the engine's runtime resource: another identity means the program started it anew. */
  processIdentity: ProcessIdentity;
  /** lib/runtime/restart.ts: stops the engine, starts the same plan, waits for /health. */
  restartScript: string;
  /** Stored as the image check stores it: no aliases, `hostAlias` names the host. */
  login: StoredLogin;
}

export interface PeerWaveInputs {
  /** In config order. */
  members: WaveMember[];
  /** Secret: per host alias, the SSH credentials of its login. */
  credentials: Record<string, { privateKey?: string; password?: string }>;
  /** Secret: engines answer /metrics only with it when they were started with one. */
  apiKey?: string;
  /** Bound on one member's restart script (stop plus health deadlines, plus margin). */
  restartTimeoutS: number;
}

export interface PeerWaveOutputs extends PeerWaveInputs {
  /** Each member as the wave last left it. */
  recorded: Record<string, MemberRecord>;
  /** Set by refresh: each member's live start, `null` when it did not answer. */
  observedStarts?: Record<string, number | null>;
  /** The last wave that restarted anything: when, why, and who. */
  lastWave?: { at: string; restarted: Restart[]; wave: string[] };
}

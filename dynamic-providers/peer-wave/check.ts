/** PeerWave inputs: at least two engines, each once; members that are not a list yet (a preview) are not judged. */
import { z } from "zod";
import { seconds } from "../../lib/provider-fields";
import type { ProcessIdentity } from "../../lib/engine/generation";
import type { MemberRecord, Restart } from "../../lib/engine/peer-wave";
import type { RestartScope } from "../../lib/engine/restart-scope";
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

const engineIds = (members: unknown[]) => members.map((m) => (m as Partial<WaveMember> | null)?.engineId);

export const peerWaveInputs = z.object({
  /** In config order. */
  members: z
    .custom<WaveMember[]>((m) => m !== undefined, { error: "members must list the wave's engines" })
    .refine((m) => !Array.isArray(m) || m.length >= 2, { error: "a peer wave needs at least two engines" })
    .refine((m) => !Array.isArray(m) || new Set(engineIds(m)).size === m.length, { error: (iss) => `engine ids repeat: ${engineIds(iss.input as unknown[]).join(", ")}` }),
  /** Secret: per host alias, the SSH credentials of its login. */
  credentials: z.record(z.string(), z.object({ privateKey: z.string().optional(), password: z.string().optional() }), {
    error: "credentials must map each host alias to its login's secrets",
  }),
  /** Secret: engines answer /metrics only with it when they were started with one. */
  apiKey: z.string({ error: "apiKey must be text" }).optional(),
  /** Bound on one member's restart script (stop plus health deadlines, plus margin). */
  restartTimeoutS: seconds("restartTimeoutS"),
  /**
   * Who restarts with a member that restarted, from the members' NIXL versions and launch plans
   * (lib/engine/restart-scope.ts); a wave recorded before it had none and restarts the component.
   */
  scope: z.custom<RestartScope>().optional(),
});

export type PeerWaveInputs = z.infer<typeof peerWaveInputs>;

export interface PeerWaveOutputs extends PeerWaveInputs {
  /** Each member as the wave last left it. */
  recorded: Record<string, MemberRecord>;
  /** Set by refresh: each member's live start, `null` when it did not answer. */
  observedStarts?: Record<string, number | null>;
  /** The last wave that found a member restarted: when, why, who restarted with it, and the scope's reason. */
  lastWave?: { at: string; restarted: Restart[]; wave: string[]; scope?: string };
}

/** EngineDrain inputs: which engine, the router host's login, the drain script and what restarts the engine. */
import { z } from "zod";
import { seconds, text } from "../../lib/provider-fields";
import type { DrainOutcome } from "../../lib/router/drain";
import type { StoredLogin } from "../../lib/ssh/stored-login";

export const engineDrainInputs = z.object({
  engineId: text("engineId"),
  /** The router host, where the script runs. */
  hostAlias: text("hostAlias"),
  /** Stored as the image check stores it: no aliases, `hostAlias` names the host. */
  login: z.custom<StoredLogin>((l) => typeof l === "object" && l !== null, { error: "login must be the router host's stored login" }),
  /** Secret: the router host login's credentials. */
  credentials: z.object({ privateKey: z.string().optional(), password: z.string().optional() }),
  /** lib/router/drain.ts's script for this engine. */
  script: text("script"),
  /**
   * The digest of what replaces the engine's process (its runtime resource's triggers): a new one means
   * the process is about to stop, so the engine is drained first.
   */
  stopKey: text("stopKey"),
  /** Bound on the whole drain over SSH (narwhal's deadline plus slack). */
  timeoutS: seconds("timeoutS"),
});

export type EngineDrainInputs = z.infer<typeof engineDrainInputs>;

export interface EngineDrainOutputs extends EngineDrainInputs {
  /** The last drain, before the engine's process was last replaced: what the serving router did, and when. */
  lastDrain?: DrainOutcome & { at: string };
}

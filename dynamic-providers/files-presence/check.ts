/** FilesPresence inputs: the host, its login, and the files commands wrote there that a refresh looks for. */
import { z } from "zod";
import { seconds, text } from "../../lib/provider-fields";
import type { StoredLogin } from "../../lib/ssh/stored-login";

export const filesPresenceInputs = z.object({
  hostAlias: text("hostAlias"),
  /** Names the stack, so each login takes the host key the stack's config pins now. */
  stack: text("stack"),
  /** Stored as the drain stores it: no alias, `hostAlias` names the host. */
  login: z.custom<StoredLogin>((l) => typeof l === "object" && l !== null, { error: "login must be the host's stored login" }),
  /** Secret: the host login's credentials. */
  credentials: z.object({ privateKey: z.string().optional(), password: z.string().optional() }),
  /** Whose files these are, in a reason (`monitoring`). */
  owner: text("owner"),
  /** Absolute paths of the files, in the order a reason lists them. */
  paths: z.array(z.string().startsWith("/", { error: "paths must be absolute" })).min(1, { error: "paths must name at least one file" }),
  /** Bound on a refresh's look at the host. */
  probeTimeoutS: seconds("probeTimeoutS"),
});

export type FilesPresenceInputs = z.infer<typeof filesPresenceInputs>;

export interface FilesPresenceOutputs extends FilesPresenceInputs {
  /** Minted at each create and part of the id, which the commands that write the files take as a trigger. */
  epoch: string;
  /** What the last refresh found: every file there, some gone (`observedDetail` names them), or not asked. */
  observedState?: "present" | "gone" | "unknown";
  observedDetail?: string;
  observedAt?: string;
}

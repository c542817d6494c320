/** InstallPresence inputs: the host, its login, and the install a refresh looks for and an update makes again. */
import { z } from "zod";
import { seconds, text } from "../../lib/provider-fields";
import type { InstallMarker, InstallOptions } from "../../lib/router/install";
import type { StoredLogin } from "../../lib/ssh/stored-login";

export const installPresenceInputs = z.object({
  hostAlias: text("hostAlias"),
  /** Names the stack, so each login takes the host key the stack's config pins now. */
  stack: text("stack"),
  /** Stored as the drain stores it: no alias, `hostAlias` names the host. */
  login: z.custom<StoredLogin>((l) => typeof l === "object" && l !== null, { error: "login must be the host's stored login" }),
  /** Secret: the host login's credentials. */
  credentials: z.object({ privateKey: z.string().optional(), password: z.string().optional() }),
  /** The install as its command makes it (lib/router/install.ts): the same script runs again here. */
  install: z.custom<InstallOptions>((o) => typeof o === "object" && o !== null && typeof (o as InstallOptions).installDir === "string", {
    error: "install must be the install's options (source, installDir, timeoutS)",
  }),
  /** Bound on a refresh's look at the host. */
  probeTimeoutS: seconds("probeTimeoutS"),
});

export type InstallPresenceInputs = z.infer<typeof installPresenceInputs>;

export type InstallState = "present" | "gone" | "unknown";

export interface InstallPresenceOutputs extends InstallPresenceInputs {
  /** What the last refresh found: the install there, gone (`observedDetail` names what is missing), or not asked. */
  observedState?: InstallState;
  observedDetail?: string;
  observedAt?: string;
  /** The last install this resource made again, after a refresh found it gone: when, and its marker. */
  lastReinstall?: { at: string; marker: InstallMarker };
}

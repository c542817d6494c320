import type { SshTarget } from "../lib/ssh/client";
import type { ImageCheckLogin } from "./image-check/types";

/**
 * The SSH target of a provider's login: the host key discovery verified is pinned (never first
 * contact); a bastion without a pinned key is accepted on first contact, as the engine's own commands do.
 */
export function loginTarget(alias: string, login: ImageCheckLogin, credentials: { privateKey?: string; password?: string }): SshTarget {
  return {
    alias,
    host: login.host,
    port: login.port,
    user: login.user,
    privateKey: credentials.privateKey,
    password: credentials.password,
    hostKey: login.hostKey,
    allowFirstContact: false,
    connectTimeoutS: login.connectTimeoutS,
    jump: login.jump && {
      alias: `${alias}-jump`,
      host: login.jump.host,
      port: login.jump.port,
      user: login.jump.user,
      privateKey: credentials.privateKey,
      password: credentials.password,
      hostKey: login.jump.hostKey,
      allowFirstContact: login.jump.hostKey === undefined,
      connectTimeoutS: login.connectTimeoutS,
    },
  };
}

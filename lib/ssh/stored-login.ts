import type { HostLogin } from "./login";

/*
 * The names providers keep a login under in state: several shapes, one per kind of resource. Deployed
 * stacks must refresh and destroy without a diff, so each shape is written as those stacks hold it
 * (`storedLoginOf`, `storedJump`) and read back into a HostLogin here alone (`readLogin`).
 */

/**
 * Every name a provider's inputs have kept a login under. Stacks made before keep these names in state,
 * and a renamed input would show as a diff (and replace evidence), so providers go on storing them and
 * read them back with `readLogin`.
 */
export type StoredLogin = {
  /** Absent in image checks and peer waves, whose resource names the host. */
  readonly alias?: string;
  readonly host: string;
  readonly port: number;
  readonly user: string;
  /** The pin as image checks, peer waves and the router's providers store it ("" when none). */
  readonly hostKey?: string;
  /** The pin as host discovery and the bastions of discovery and fabric edges store it; outranks `hostKey`, which in discovery's state is the key it recorded. */
  readonly pinnedHostKey?: string;
  /** Absent in stored bastions, which use their host's. */
  readonly connectTimeoutS?: number;
  readonly maxSessions?: number;
  readonly jump?: StoredLogin;
};

/** What a provider knows about a stored login besides the login object itself. */
export interface LoginContext {
  /** The host's alias when the stored login has none. */
  readonly alias?: string;
  /** A key recorded elsewhere (discovery's record, an edge's endpoint), used when the login pins none. */
  readonly hostKey?: string;
  readonly connectTimeoutS?: number;
  /** The credentials, which providers keep as their own secret inputs; "" means none. */
  readonly privateKey?: string;
  readonly password?: string;
}

/** The one place old stored names are read: `pinnedHostKey`, a bastion without alias or timeout, "" for no key. */
export function readLogin(stored: StoredLogin, context: LoginContext = {}): HostLogin {
  const alias = stored.alias ?? context.alias;
  if (!alias) throw new Error(`login ${stored.user}@${stored.host}:${stored.port}: no host alias to name it by`);
  const connectTimeoutS = stored.connectTimeoutS ?? context.connectTimeoutS;
  if (connectTimeoutS === undefined) throw new Error(`host ${alias}: the stored login has no connectTimeoutS`);
  const j = stored.jump;
  return {
    alias,
    host: stored.host,
    port: stored.port,
    user: stored.user,
    hostKey: stored.pinnedHostKey || stored.hostKey || context.hostKey || undefined,
    privateKey: context.privateKey || undefined,
    password: context.password || undefined,
    connectTimeoutS,
    ...(stored.maxSessions !== undefined ? { maxSessions: stored.maxSessions } : {}),
    ...(j ? { jump: readLogin(j, { alias: `${alias}-jump`, connectTimeoutS, privateKey: context.privateKey, password: context.password }) } : {}),
  };
}

/** The bastion as host discovery and fabric edges have always stored it: `pinnedHostKey`, no timeout. */
export function storedJump(jump: HostLogin | undefined): StoredLogin | undefined {
  return jump && { alias: jump.alias, host: jump.host, port: jump.port, user: jump.user, pinnedHostKey: jump.hostKey };
}

/** The plain fields of an @pulumi/command connection that name a login (credentials apart). */
export interface ConnectionFields {
  readonly host: string;
  readonly port?: number;
  readonly user?: string;
  readonly hostKey?: string;
  readonly perDialTimeout?: number;
  readonly proxy?: { readonly host: string; readonly port?: number; readonly user?: string; readonly hostKey?: string };
}

/**
 * The login of the connection a host's commands use, as providers store it: image checks and peer
 * waves without aliases (their `hostAlias` names the host), the router's providers with `alias` (and
 * `<alias>-jump` for the bastion). Written exactly as before, so stacks made before see no diff.
 */
export function storedLoginOf(c: ConnectionFields, alias?: string): StoredLogin {
  const p = c.proxy;
  return {
    ...(alias ? { alias } : {}),
    host: c.host,
    port: c.port ?? 22,
    user: c.user ?? "root",
    hostKey: c.hostKey ?? "",
    connectTimeoutS: c.perDialTimeout ?? 15,
    ...(p ? { jump: { ...(alias ? { alias: `${alias}-jump` } : {}), host: p.host, port: p.port ?? 22, user: p.user ?? "root", ...(p.hostKey ? { hostKey: p.hostKey } : {}) } } : {}),
  };
}

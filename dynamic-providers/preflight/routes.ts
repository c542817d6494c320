/**
 * The router host's network position for probes: SSH local forwards through the router host when `via`
 * is set (never a direct connection to a private address from here), and each engine's answers named.
 */
import type { HttpJournal } from "../../lib/evidence/http-journal";
import { SshSession } from "../../lib/ssh/client";
import { forwardedUrl, localForward, type LocalForward } from "../../lib/ssh/forward";
import { OPERATE, sshTarget } from "../../lib/ssh/login";
import { readLogin, type StoredLogin } from "../../lib/ssh/stored-login";

/** The login to the router host, its secrets apart; absent `via` = from this machine. */
export interface RouterHost {
  via?: StoredLogin;
  viaPrivateKey?: string;
  viaPassword?: string;
}

/** Runs `fn` with engine and sidecar base URLs reachable from where the router will reach them. */
export async function withRoutes<T, E extends { url: string; attestationUrl?: string }>(i: RouterHost, engines: E[], fn: (routed: E[]) => Promise<T>): Promise<T> {
  if (!i.via) return fn(engines);
  const session = await SshSession.open(sshTarget(readLogin(i.via, { privateKey: i.viaPrivateKey, password: i.viaPassword }), OPERATE));
  const forwards: LocalForward[] = [];
  const route = async (url: string): Promise<string> => {
    const u = new URL(url);
    const f = await localForward(session, u.hostname.replace(/^\[|\]$/g, ""), Number(u.port || 80));
    forwards.push(f);
    return forwardedUrl(url, f);
  };
  try {
    const routed: E[] = [];
    for (const e of engines) routed.push({ ...e, url: await route(e.url), ...(e.attestationUrl ? { attestationUrl: await route(e.attestationUrl) } : {}) });
    return await fn(routed);
  } finally {
    await Promise.all(forwards.map((f) => f.close()));
    session.close();
  }
}

/** Names each engine's (and its sidecar's) answers by its id in the step's commands, routed or not. */
export function nameEngines(journal: HttpJournal, engines: ReadonlyArray<{ iid: string; url: string; attestationUrl?: string }>): void {
  for (const e of engines) {
    journal.name(e.url, `engine ${e.iid}`);
    if (e.attestationUrl) journal.name(e.attestationUrl, `sidecar ${e.iid}`);
  }
}

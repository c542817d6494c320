/**
 * The engines' log tails the preflight keeps when a gate line fails: read over each engine host's SSH
 * login from where its runtime writes the log (lib/engine/log-tail.ts). One login per host, closed after.
 */
import { logTargets, type EngineLogSource } from "../../lib/engine/log-source";
import { logTailScript } from "../../lib/engine/log-tail";
import { SshSession } from "../../lib/ssh/client";
import { OPERATE, sshTarget } from "../../lib/ssh/login";
import { readLogin, type StoredLogin } from "../../lib/ssh/stored-login";

/** Where one engine's log is, and the login to its host (secrets apart, by host alias). */
export interface EngineLogAccess {
  engineId: string;
  hostAlias: string;
  login: StoredLogin;
  engineLog: EngineLogSource;
  /** A container engine's id (its log is `docker logs` of it). */
  containerId?: string;
}

/** The engine hosts' SSH secrets by host alias: Pulumi secrets, never in a record. */
export type EngineHostSecrets = Record<string, { privateKey?: string; password?: string }>;

export interface LogTail {
  engineId: string;
  source: string;
  text: string;
}

const READ_TIMEOUT_S = 20;

/** Reads tails on demand; `close` ends every login it opened. */
export function engineLogTails(access: ReadonlyArray<EngineLogAccess>, secrets: EngineHostSecrets = {}) {
  const byEngine = new Map(access.map((a) => [a.engineId, a]));
  const sessions = new Map<string, Promise<SshSession>>();
  const session = (a: EngineLogAccess) => {
    let s = sessions.get(a.hostAlias);
    if (!s) {
      const secret = secrets[a.hostAlias] ?? {};
      s = SshSession.open(sshTarget(readLogin(a.login, { alias: a.hostAlias, privateKey: secret.privateKey, password: secret.password }), OPERATE));
      sessions.set(a.hostAlias, s);
    }
    return s;
  };
  return {
    /** The engine's log tail: the first of its log places that exists; a reason in place of the text when none can be read. */
    async tail(engineId: string): Promise<LogTail> {
      const a = byEngine.get(engineId);
      if (!a) return { engineId, source: "none", text: `(no log source for engine ${engineId})` };
      const why: string[] = [];
      try {
        const ssh = await session(a);
        for (const target of logTargets(a.engineLog, a.containerId)) {
          const read = logTailScript(target, READ_TIMEOUT_S);
          const r = await ssh.exec(read.script, { timeoutS: READ_TIMEOUT_S + 10, name: `reading the tail of ${read.source}` });
          if (r.code === 0) return { engineId, source: `host ${a.hostAlias}: ${read.source}`, text: r.stdout };
          why.push(`${read.source}: ${r.stderr.trim() || `exited ${r.code}`}`);
        }
      } catch (err) {
        why.push((err as Error).message);
      }
      return { engineId, source: `host ${a.hostAlias}`, text: `(log unavailable: ${why.join("; ")})` };
    },
    async close(): Promise<void> {
      for (const s of sessions.values()) await s.then((x) => x.close(), () => undefined);
    },
  };
}

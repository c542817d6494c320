/**
 * The trial's host probes over the logins the LoadTrial provider opened: each host's socket summary and
 * who holds the router's port, every script noted for the record's commands.
 */
import type { SshSession } from "../ssh/client";
import type { EvidenceCommand } from "../evidence/record";
import { listenerProblem, listenerScript, SOCKETS_SCRIPT } from "./record";
import type { HostProbes } from "./run";

const SOCKETS_TIMEOUT_S = 20;

/** Where the router runs, and a login to any other host (`login`, closed here after its one script). */
export interface ProbedHosts<H extends { alias: string }> {
  router: { alias: string; session: SshSession; port: number; pid: number };
  hosts: ReadonlyArray<H>;
  login(host: H): Promise<SshSession>;
}

export function hostProbes<H extends { alias: string }>(p: ProbedHosts<H>, commands: EvidenceCommand[]): HostProbes {
  const exec = async (s: SshSession, host: string, script: string, name: string) => {
    const startedAt = new Date().toISOString();
    const r = await s.exec(script, { timeoutS: SOCKETS_TIMEOUT_S, name });
    commands.push({ host, argv: ["sh", "-c", script], exitStatus: r.code >= 0 && r.code <= 255 ? r.code : null, startedAt, endedAt: new Date().toISOString() });
    return r;
  };
  const { router } = p;
  return {
    async sockets() {
      const out: Record<string, string> = {};
      for (const h of p.hosts) {
        const s = h.alias === router.alias ? router.session : await p.login(h);
        try {
          out[h.alias] = (await exec(s, h.alias, SOCKETS_SCRIPT, "socket summary (ss)")).stdout;
        } finally {
          if (s !== router.session) s.close();
        }
      }
      return out;
    },
    async listener() {
      const r = await exec(router.session, router.alias, listenerScript(router.port), "router port listener (ss -ltnp)");
      return listenerProblem(r.stdout, router.port, router.pid, router.alias);
    },
  };
}

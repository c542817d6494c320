/**
 * A local port forward (ssh -L 127.0.0.1:<free>:host:port) over an open session: measurements made
 * through it leave from the SSH host's network position, which is how the router host reaches private
 * engine URLs. The listener takes loopback only and closes with `close()`.
 */
import { createServer, type Server, type Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { SshSession } from "./client";

export interface LocalForward {
  /** `http://127.0.0.1:<port>`-style base for a URL whose host:port was forwarded. */
  readonly port: number;
  close(): Promise<void>;
}

/** `log`, when given, hears of each connection carried and each the far end refused: a trial keeps it as the tunnel's log. */
export async function localForward(session: SshSession, host: string, port: number, log?: (line: string) => void): Promise<LocalForward> {
  const sockets = new Set<Socket>();
  let carried = 0;
  const server: Server = createServer((local) => {
    sockets.add(local);
    carried++;
    local.once("close", () => sockets.delete(local));
    local.pause();
    session.openTcp(host, port).then(
      (sock) => {
        // The channel ssh2 returns is a duplex stream.
        const remote = sock as unknown as Duplex;
        local.pipe(remote);
        remote.pipe(local);
        local.once("close", () => remote.destroy());
        remote.once("close", () => local.destroy());
        local.resume();
      },
      (err: Error) => {
        log?.(`connection ${carried} to ${host}:${port} refused: ${err.message}`);
        local.destroy();
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  return {
    port: (server.address() as { port: number }).port,
    close: () =>
      new Promise<void>((resolve) => {
        log?.(`closed after ${carried} connection(s)`);
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** The URL with its host:port replaced by the forward's loopback end (path and scheme kept). */
export function forwardedUrl(url: string, forward: LocalForward): string {
  const u = new URL(url);
  u.hostname = "127.0.0.1";
  u.port = String(forward.port);
  return u.toString().replace(/\/$/, "");
}

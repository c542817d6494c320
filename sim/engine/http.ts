/** What the engine port (./server.ts) and the control port (./control.ts) do alike with node:http. */
import type { Server, ServerResponse } from "node:http";

export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const text = JSON.stringify(value);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

/** Resolves once the server listens; rejects with the bind error (a taken port, an absent address). */
export function listenOn(http: Server, host: string | null, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    http.once("error", reject);
    http.listen({ host: host ?? undefined, port }, () => {
      http.off("error", reject);
      resolve();
    });
  });
}

/** Stops listening and drops open connections, idle keep-alive ones included, so close resolves promptly. */
export function closeServer(http: Server): Promise<void> {
  return new Promise((resolve) => {
    http.close(() => resolve());
    http.closeAllConnections();
  });
}

/** The SSH sessions of one edge's measurement or observation: one per end, each step recorded (lib/ssh/recorded-session.ts). */
import { OPERATE, sshTarget } from "../../lib/ssh/login";
import { RecordedSession } from "../../lib/ssh/recorded-session";
import { readLogin, type StoredLogin } from "../../lib/ssh/stored-login";
import type { EdgeEndpoint, FabricEdgeInputs } from "./schema";

/** An end's login, pinned to the key discovery verified for it (kept on the endpoint, not the login). */
const open = (end: EdgeEndpoint, login: StoredLogin, privateKey?: string, password?: string) =>
  RecordedSession.open(sshTarget(readLogin(login, { alias: end.alias, hostKey: end.hostKey, privateKey, password }), OPERATE));

export async function withSessions<T>(i: FabricEdgeInputs, fn: (src: RecordedSession, dst: RecordedSession) => Promise<T>): Promise<T> {
  const [src, dst] = await Promise.all([
    open(i.source, i.sourceLogin, i.sourcePrivateKey, i.sourcePassword),
    open(i.destination, i.destinationLogin, i.destinationPrivateKey, i.destinationPassword),
  ]);
  try {
    return await fn(src, dst);
  } finally {
    src.close();
    dst.close();
  }
}

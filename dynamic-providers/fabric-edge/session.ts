/**
 * The SSH sessions of one edge's measurement or observation: one per end, each step (script or command)
 * recorded with its exit status and times for the evidence record.
 */
import { SshSession, type ExecResult } from "../../lib/ssh/client";
import { OPERATE, sshTarget, type SshTarget } from "../../lib/ssh/login";
import { readLogin, type StoredLogin } from "../../lib/ssh/stored-login";
import { sha256Json } from "../../lib/digest";
import type { PathEnd } from "../../lib/fabric/path";
import type { EdgeEndpoint, FabricEdgeInputs } from "./types";

/** An end's login, pinned to the key discovery verified for it (kept on the endpoint, not the login). */
function target(end: EdgeEndpoint, login: StoredLogin, privateKey?: string, password?: string): SshTarget {
  return sshTarget(readLogin(login, { alias: end.alias, hostKey: end.hostKey, privateKey, password }), OPERATE);
}

export const pathEnd = (e: EdgeEndpoint): PathEnd => ({ host: e.alias, interface: e.fabricInterface, address: e.fabricAddress });

/** One step as the evidence record lists it. */
export interface Step {
  host: string;
  argv?: string[];
  scriptSha256?: string;
  exitStatus: number | null;
  startedAt: string;
  endedAt: string;
}

export class Session {
  readonly steps: Step[] = [];
  private constructor(
    readonly ssh: SshSession,
    readonly alias: string,
  ) {}

  static async open(t: SshTarget): Promise<Session> {
    return new Session(await SshSession.open(t), t.alias);
  }

  /** Runs a script with `sh -s`; the result whatever its exit status. */
  async script(name: string, text: string, timeoutS: number): Promise<ExecResult> {
    return this.step({ scriptSha256: sha256Json(text) }, () => this.ssh.exec("sh -s", { stdin: text, timeoutS, name }));
  }

  async command(name: string, line: string, argv: string[], timeoutS: number): Promise<ExecResult> {
    return this.step({ argv }, () => this.ssh.exec(line, { timeoutS, name }));
  }

  private async step(what: Pick<Step, "argv" | "scriptSha256">, run: () => Promise<ExecResult>): Promise<ExecResult> {
    const startedAt = new Date().toISOString();
    let exitStatus: number | null = null;
    try {
      const r = await run();
      exitStatus = r.code >= 0 && r.code <= 255 ? r.code : null;
      return r;
    } finally {
      this.steps.push({ host: this.alias, ...what, exitStatus, startedAt, endedAt: new Date().toISOString() });
    }
  }

  close(): void {
    this.ssh.close();
  }
}

export async function withSessions<T>(i: FabricEdgeInputs, fn: (src: Session, dst: Session) => Promise<T>): Promise<T> {
  const [src, dst] = await Promise.all([
    Session.open(target(i.source, i.sourceLogin, i.sourcePrivateKey, i.sourcePassword)),
    Session.open(target(i.destination, i.destinationLogin, i.destinationPrivateKey, i.destinationPassword)),
  ]);
  try {
    return await fn(src, dst);
  } finally {
    src.close();
    dst.close();
  }
}

/** Steps of both sessions in the order they started. */
export function stepsOf(src: Session, dst: Session): Step[] {
  return [...src.steps, ...dst.steps].sort((a, b) => (a.startedAt < b.startedAt ? -1 : a.startedAt > b.startedAt ? 1 : 0));
}

/**
 * An SSH session that keeps each step it runs (script or command) with its exit status and times, for
 * an evidence record's commands.
 */
import { SshSession, type ExecResult } from "./client";
import type { SshTarget } from "./login";
import { sha256Json } from "../digest";

/** One step as the evidence record lists it. */
export interface Step {
  host: string;
  argv?: string[];
  scriptSha256?: string;
  exitStatus: number | null;
  startedAt: string;
  endedAt: string;
}

export class RecordedSession {
  readonly steps: Step[] = [];
  private constructor(
    readonly ssh: SshSession,
    readonly alias: string,
  ) {}

  static async open(t: SshTarget): Promise<RecordedSession> {
    return new RecordedSession(await SshSession.open(t), t.alias);
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

/** Steps of several sessions in the order they started. */
export function stepsOf(...sessions: RecordedSession[]): Step[] {
  return sessions.flatMap((s) => s.steps).sort((a, b) => (a.startedAt < b.startedAt ? -1 : a.startedAt > b.startedAt ? 1 : 0));
}

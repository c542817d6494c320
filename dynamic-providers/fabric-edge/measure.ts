/**
 * One directed measurement on the edge's two hosts, and the cheap observation `read` repeats: the SSH
 * sessions, both sides' path observations, the preflight, the iperf3 server and client, and the steps
 * taken, for the evidence record. The provider (./provider.ts) decides what to keep.
 */
import { SshSession, type ExecResult } from "../../lib/ssh/client";
import { OPERATE, sshTarget, type SshTarget } from "../../lib/ssh/login";
import { readLogin, type StoredLogin } from "../../lib/ssh/stored-login";
import { sha256Json } from "../../lib/digest";
import { shellLine } from "../../lib/shell";
import { FabricError } from "../../lib/fabric/errors";
import { FABRIC_DIAGNOSIS } from "../../lib/fabric/matrix";
import type { Iperf3Commands } from "../../lib/fabric/iperf3";
import {
  BUSY_IPERF3,
  BUSY_PORT,
  clientArgv,
  clientLifetimeS,
  KILL_GRACE_S,
  NO_IPERF3,
  preflightScript,
  runDirOf,
  SERVER_LOG_MARK,
  SERVER_READY_TIMEOUT_S,
  serverStartScript,
  serverStopScript,
} from "../../lib/fabric/iperf3-remote";
import { parsePathObservation, pathFingerprint, pathObservationScript, type PathEnd, type PathFingerprint, type PathObservation } from "../../lib/fabric/path";
import type { EdgeEndpoint, FabricEdgeInputs, PathDigests } from "./types";

/** Bounded steps, named so a timeout says which one ran out. */
const OBSERVE_TIMEOUT_S = 20;
const PREFLIGHT_TIMEOUT_S = 20;
const SERVER_START_TIMEOUT_S = SERVER_READY_TIMEOUT_S + 10;
const SERVER_STOP_TIMEOUT_S = KILL_GRACE_S + 15;

/** An end's login, pinned to the key discovery verified for it (kept on the endpoint, not the login). */
function target(end: EdgeEndpoint, login: StoredLogin, privateKey?: string, password?: string): SshTarget {
  return sshTarget(readLogin(login, { alias: end.alias, hostKey: end.hostKey, privateKey, password }), OPERATE);
}

const pathEnd = (e: EdgeEndpoint): PathEnd => ({ host: e.alias, interface: e.fabricInterface, address: e.fabricAddress });

/** One step as the evidence record lists it. */
export interface Step {
  host: string;
  argv?: string[];
  scriptSha256?: string;
  exitStatus: number | null;
  startedAt: string;
  endedAt: string;
}

class Session {
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

export interface Sides {
  forward: PathFingerprint;
  back: PathFingerprint;
  seen: { source: PathObservation; destination: PathObservation };
}

/** Both hosts' sides of the path, observed at once; no traffic. */
export async function observe(i: FabricEdgeInputs, src: Session, dst: Session): Promise<Sides> {
  const s = pathEnd(i.source);
  const d = pathEnd(i.destination);
  const [so, dob] = await Promise.all([
    src.script("fabric path observation", pathObservationScript(s, d.address), OBSERVE_TIMEOUT_S),
    dst.script("fabric path observation", pathObservationScript(d, s.address), OBSERVE_TIMEOUT_S),
  ]);
  const source = parsePathObservation(s.host, so.stdout);
  const destination = parsePathObservation(d.host, dob.stdout);
  return {
    forward: pathFingerprint(i.transport, s, d, source),
    back: pathFingerprint(i.transport, d, s, destination),
    seen: { source, destination },
  };
}

export function digestsOf(sides: Sides): PathDigests {
  return { forwardPath: sides.forward.digest, returnPath: sides.back.digest };
}

export function problemsOf(sides: Sides): string[] {
  const side = (f: PathFingerprint, which: string) => (f.ok ? f.problems.map((p) => `${which}: ${p}`) : [f.reason]);
  return [...side(sides.forward, "forward path"), ...side(sides.back, "return path")];
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


function busyMessage(i: FabricEdgeInputs, host: string, r: ExecResult): string {
  const what = r.stdout.trim() || r.stderr.trim();
  if (r.code === NO_IPERF3) return `edge ${i.edgeId}: host ${host}: ${what}; install iperf3 on every engine host`;
  if (r.code === BUSY_IPERF3) return `edge ${i.edgeId}: host ${host}: ${what}; another measurement or test traffic is running there, and the mesh is measured one edge at a time while idle`;
  if (r.code === BUSY_PORT) return `edge ${i.edgeId}: host ${host}: ${what}; choose another fabric.iperfPort or stop that listener`;
  return `edge ${i.edgeId}: host ${host}: the fabric preflight exited ${r.code}: ${what}`;
}

export interface Run {
  sides: Sides;
  clientText: string;
  clientExit: number;
  serverLog: string;
  startedAt: string;
  endedAt: string;
  steps: Step[];
}

/** Server on the destination, client on the source, server stopped in every case. */
export async function measure(i: FabricEdgeInputs, commands: Iperf3Commands): Promise<Run> {
  return withSessions(i, async (src, dst) => {
    const sides = await observe(i, src, dst);
    const problems = problemsOf(sides);
    if (problems.length) {
      throw new FabricError(
        "NARWHAL_FABRIC_PATH",
        `edge ${i.edgeId}: the measurement would not take the fabric path: ${problems.join("; ")}. Diagnose ${FABRIC_DIAGNOSIS.slice(0, 2).join(" and ")}; nothing was measured`,
      );
    }
    const [pre, pred] = await Promise.all([
      src.script("fabric preflight", preflightScript(null), PREFLIGHT_TIMEOUT_S),
      dst.script("fabric preflight", preflightScript(commands.settings.port), PREFLIGHT_TIMEOUT_S),
    ]);
    if (pre.code !== 0) throw new FabricError("NARWHAL_FABRIC_BUSY", busyMessage(i, i.source.alias, pre));
    if (pred.code !== 0) throw new FabricError("NARWHAL_FABRIC_BUSY", busyMessage(i, i.destination.alias, pred));

    const start = await dst.script("iperf3 server start", serverStartScript(commands), SERVER_START_TIMEOUT_S);
    // The folder is printed before anything can fail, so a server that started is always stopped.
    const dir = start.stdout.startsWith("/tmp/narwhal-fabric.") ? runDirOf(i.destination.alias, start.stdout) : null;
    let client: ExecResult | undefined;
    let failure: Error | undefined;
    let startedAt = "";
    let endedAt = "";
    try {
      if (start.code !== 0) {
        throw new FabricError(
          "NARWHAL_FABRIC_TOOL_FAILED",
          `edge ${i.edgeId}: host ${i.destination.alias}: ${start.stderr.trim() || `the iperf3 server start exited ${start.code}`}; diagnose listener and binding`,
        );
      }
      const argv = clientArgv(commands);
      startedAt = new Date().toISOString();
      client = await src.command("iperf3 client", shellLine(argv), argv, clientLifetimeS(commands.settings.durationS) + KILL_GRACE_S + 5);
      endedAt = new Date().toISOString();
    } catch (err) {
      failure = err as Error;
    }
    let serverLog = "";
    if (dir) {
      const stop = await dst.script("iperf3 server stop", serverStopScript(dir, commands.settings.port), SERVER_STOP_TIMEOUT_S);
      serverLog = stop.stdout.slice(stop.stdout.indexOf(SERVER_LOG_MARK) + SERVER_LOG_MARK.length).trim();
      if (stop.code !== 0) {
        const left = `edge ${i.edgeId}: host ${i.destination.alias}: ${stop.stderr.trim() || `stopping the iperf3 server exited ${stop.code}`}`;
        throw new FabricError("NARWHAL_FABRIC_BUSY", failure ? `${failure.message}; and ${left}` : left);
      }
    }
    if (failure) throw failure;
    const steps = [...src.steps, ...dst.steps].sort((a, b) => (a.startedAt < b.startedAt ? -1 : a.startedAt > b.startedAt ? 1 : 0));
    return { sides, clientText: client!.stdout, clientExit: client!.code, serverLog, startedAt, endedAt, steps };
  });
}


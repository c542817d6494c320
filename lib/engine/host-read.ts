/**
 * The cache capture's reads on the engine's host, over one SSH login: the engine's log, when the process
 * that wrote it started, and the model's config.json (scripts and their output's meaning:
 * lib/engine/log-source.ts). Each read is bounded and named, and joins the commands the evidence keeps.
 * The provider (dynamic-providers/cache-capture) opens the reader inside its call.
 */
import { EngineError } from "./errors";
import {
  configReadScript,
  logReadScript,
  logTargets,
  noServingLog,
  parseConfigRead,
  parseLogRead,
  parseProcessStart,
  processStartScript,
  type EngineLogSource,
  type LogTarget,
  type LogText,
} from "./log-source";
import { checkLogIsServingProcess, readEngineStartup, type EngineStartup, type LogOrigin, type LogProcess } from "./startup-log";
import { SshSession } from "../ssh/client";
import { OPERATE, sshTarget } from "../ssh/login";
import { readLogin, type StoredLogin } from "../ssh/stored-login";
import { capture, newAttempt, scriptCommand, type Attempt } from "../evidence/failed-attempt";
import type { EvidenceCommand } from "../evidence/record";
import { ATTEMPTS_DIR, listAttemptsScript, parseKeptAttempts, type KeptAttempt } from "../runtime/attempts";
import { NATIVE_ENGINE_LOG } from "../runtime/native";

/** The engine's host and what is read there: its login (secrets beside it), its log, its checkpoint. */
export interface EngineHost {
  hostAlias: string;
  login: StoredLogin;
  privateKey?: string;
  password?: string;
  engineLog: EngineLogSource;
  /** Its container, when the engine runs in one: its log is read by this id. */
  processIdentity: { containerId?: string };
  modelDir: string;
}

/** One login to the engine's host for the capture's reads; `close` ends it. */
export class HostReader {
  private constructor(
    private readonly ssh: SshSession,
    private readonly i: EngineHost,
    private readonly timeoutS: number,
    private readonly attempt: Attempt,
  ) {}

  /** Every command run so far, as the evidence record lists it (a failed capture's record too). */
  get commands(): EvidenceCommand[] {
    return this.attempt.commands;
  }

  static async open(i: EngineHost, timeoutS: number, attempt: Attempt = newAttempt()): Promise<HostReader> {
    try {
      const ssh = await SshSession.open(sshTarget(readLogin(i.login, { alias: i.hostAlias, privateKey: i.privateKey, password: i.password }), OPERATE));
      return new HostReader(ssh, i, timeoutS, attempt);
    } catch (err) {
      throw new EngineError("NARWHAL_CACHE_LOG", `host ${i.hostAlias}: the cache capture could not log in to read the engine's log: ${(err as Error).message}`);
    }
  }

  private async run(script: string, name: string) {
    const host = this.i.hostAlias;
    const startedAt = new Date().toISOString();
    const r = await this.ssh.exec(script, { timeoutS: this.timeoutS, name }).catch((err: Error) => {
      this.attempt.commands.push(scriptCommand(script, host, null, startedAt));
      throw new EngineError("NARWHAL_CACHE_LOG", `host ${host}: ${name}: ${err.message}`, err.message);
    });
    this.attempt.commands.push(scriptCommand(script, host, r.code, startedAt));
    // What each read printed is kept while the capture runs: a refused log is the evidence of the refusal.
    capture(this.attempt, name, r.stderr ? `${r.stdout}\n[stderr]\n${r.stderr}` : r.stdout);
    return r;
  }

  /** One log's text and where it was read; an error naming the host and the file when there is none. */
  async log(target: LogTarget): Promise<{ log: LogText; origin: LogOrigin }> {
    const read = logReadScript(target, this.timeoutS);
    const r = await this.run(read.script, `reading the engine log ${read.source}`);
    const host = this.i.hostAlias;
    const log = parseLogRead(r.stdout, r.stderr, { host, source: read.source });
    const source = log.since ? `${read.source} --since ${log.since}` : read.source;
    return { log, origin: { host, source, readBytes: log.readBytes, ...(log.totalBytes !== undefined ? { totalBytes: log.totalBytes } : {}) } };
  }

  /** Whether `pid` runs on the host, and since when (its /proc entry). */
  async processStart(pid: number): Promise<LogProcess> {
    const r = await this.run(processStartScript(pid), `reading when pid ${pid} started`);
    return parseProcessStart(r.stdout, this.i.hostAlias, pid);
  }

  /** The model's config.json, its exact bytes. */
  async config(): Promise<Buffer> {
    const r = await this.run(configReadScript(this.i.modelDir), `reading ${this.i.modelDir}/config.json`);
    return parseConfigRead(r.stdout, this.i.hostAlias, this.i.modelDir);
  }

  /** The failed starts kept in the engine's run folder (lib/runtime/attempts.ts), none when it has none. */
  async keptAttempts(runDir: string): Promise<KeptAttempt[]> {
    const r = await this.run(listAttemptsScript(runDir, NATIVE_ENGINE_LOG), `listing the failed starts kept in ${runDir}/${ATTEMPTS_DIR}`);
    return parseKeptAttempts(r.stdout);
  }

  close(): void {
    this.ssh.close();
  }
}

/** The errors that say a log is not (or no longer) the serving engine's: another candidate may be. */
const LOG_REFUSALS = new Set(["NARWHAL_CACHE_LOG", "NARWHAL_CACHE_LOG_ROTATED"]);

/**
 * The serving engine's log: each candidate in turn, read and checked; for a file, its API server must be
 * the process serving now (started at `servingStartS`). None passing is an error naming each candidate.
 */
export async function servingLog(reader: HostReader, i: EngineHost, servingStartS: number): Promise<{ startup: EngineStartup; origin: LogOrigin }> {
  const refusals: Array<{ source: string; error: EngineError }> = [];
  for (const target of logTargets(i.engineLog, i.processIdentity.containerId)) {
    try {
      const { log, origin } = await reader.log(target);
      const startup = readEngineStartup(log.text, origin);
      // A container's log is its own since its latest start; a file may hold any start's lines.
      if (target.kind === "file") checkLogIsServingProcess(startup, await reader.processStart(startup.apiServer.pid), servingStartS, origin);
      return { startup, origin };
    } catch (err) {
      const e = err as EngineError;
      if (!LOG_REFUSALS.has(e.code)) throw err;
      refusals.push({ source: target.kind === "file" ? target.path : `docker logs ${target.containerId.slice(0, 12)}`, error: e });
    }
  }
  throw noServingLog(i.hostAlias, refusals);
}

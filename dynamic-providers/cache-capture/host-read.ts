/**
 * The capture's reads on the engine's host, over one SSH login: the engine's log and the model's
 * config.json (scripts and their output's meaning: lib/engine/log-source.ts). Each read is bounded and
 * named; each is returned with the command record the evidence keeps.
 */
import { createHash } from "node:crypto";
import { configReadScript, logReadScript, parseConfigRead, parseLogRead, parseProcessStart, processStartScript, type LogText } from "../../lib/engine/log-source";
import { EngineError } from "../../lib/engine/errors";
import type { LogOrigin, LogProcess } from "../../lib/engine/startup-log";
import { SshSession } from "../../lib/ssh/client";
import { OPERATE, sshTarget } from "../../lib/ssh/login";
import { readLogin } from "../../lib/ssh/stored-login";
import type { CacheCaptureInputs } from "./types";

/** One command run on the host, as the evidence record lists it. */
export interface HostCommand {
  scriptSha256: string;
  host: string;
  exitStatus: number | null;
  startedAt: string;
  endedAt: string;
}

export interface HostReads {
  log: LogText;
  origin: LogOrigin;
  config: Buffer;
  commands: HostCommand[];
}

async function run(ssh: SshSession, host: string, script: string, name: string, timeoutS: number, commands: HostCommand[]) {
  const startedAt = new Date().toISOString();
  const r = await ssh.exec(script, { timeoutS, name }).catch((err: Error & { code?: string }) => {
    throw new EngineError("NARWHAL_CACHE_LOG", `host ${host}: ${name}: ${err.message}`, err.message);
  });
  commands.push({ scriptSha256: `sha256:${createHash("sha256").update(script).digest("hex")}`, host, exitStatus: r.code >= 0 && r.code <= 255 ? r.code : null, startedAt, endedAt: new Date().toISOString() });
  return r;
}

async function login(i: CacheCaptureInputs): Promise<SshSession> {
  try {
    return await SshSession.open(sshTarget(readLogin(i.login, { alias: i.hostAlias, privateKey: i.privateKey, password: i.password }), OPERATE));
  } catch (err) {
    throw new EngineError("NARWHAL_CACHE_LOG", `host ${i.hostAlias}: the cache capture could not log in to read the engine's log: ${(err as Error).message}`);
  }
}

/** Reads the log, then config.json; throws an EngineError naming the host and what could not be read. */
export async function readOnHost(i: CacheCaptureInputs, timeoutS: number): Promise<HostReads> {
  const host = i.hostAlias;
  const read = logReadScript(i.engineLog, i.processIdentity.containerId, timeoutS);
  const commands: HostCommand[] = [];
  const ssh = await login(i);
  try {
    const logRun = await run(ssh, host, read.script, `reading the engine log ${read.source}`, timeoutS, commands);
    const log = parseLogRead(logRun.stdout, logRun.stderr, { host, source: read.source });
    const configRun = await run(ssh, host, configReadScript(i.modelDir), `reading ${i.modelDir}/config.json`, timeoutS, commands);
    const config = parseConfigRead(configRun.stdout, host, i.modelDir);
    const origin: LogOrigin = { host, source: read.source, readBytes: log.readBytes, ...(log.totalBytes !== undefined ? { totalBytes: log.totalBytes } : {}) };
    return { log, origin, config, commands };
  } finally {
    ssh.close();
  }
}

/** Whether `pid` runs on the host, and since when (its /proc entry); the command joins `commands`. */
export async function processOnHost(i: CacheCaptureInputs, pid: number, timeoutS: number, commands: HostCommand[]): Promise<LogProcess> {
  const ssh = await login(i);
  try {
    const r = await run(ssh, i.hostAlias, processStartScript(pid), `reading when pid ${pid} started`, timeoutS, commands);
    return parseProcessStart(r.stdout, i.hostAlias, pid);
  } finally {
    ssh.close();
  }
}

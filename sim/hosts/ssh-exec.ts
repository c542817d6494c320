/**
 * A real SSH login to a simulated host with ssh2, verifying the host key against the one the harness
 * recorded (never trusting on first use). For tests; the program has its own client in lib/ssh.
 */
import * as fs from "node:fs";
import { Client, ConnectConfig } from "ssh2";
import { RunResult, SimError } from "./exec";
import type { SimHost } from "./host";

export interface SshExecOptions {
  /** Default root with the harness key; `narwhal` with `password` on a passwordAuth host. */
  user?: string;
  password?: string;
  /** Default the harness key (ignored when `password` is given). */
  privateKeyPath?: string;
  /** The host key line to expect; default the one the harness recorded. */
  expectHostKey?: string;
  /** Bounds connect and command together. */
  timeoutMs?: number;
}

export const SSH_EXEC_TIMEOUT_MS = 15_000;

export function sshConnect(host: SimHost, opts: SshExecOptions = {}): Promise<Client> {
  const expected = Buffer.from((opts.expectHostKey ?? host.hostKey).trim().split(/\s+/)[1], "base64");
  const config: ConnectConfig = {
    host: host.address,
    port: host.sshPort,
    username: opts.user ?? host.user,
    readyTimeout: opts.timeoutMs ?? SSH_EXEC_TIMEOUT_MS,
    hostVerifier: (key: Buffer) => key.equals(expected),
    ...(opts.password !== undefined ? { password: opts.password } : { privateKey: fs.readFileSync(opts.privateKeyPath ?? host.privateKeyPath) }),
  };
  return new Promise((resolve, reject) => {
    const client = new Client();
    client.once("ready", () => resolve(client));
    client.once("error", (err) => reject(err));
    client.connect(config);
  });
}

/** Runs one command over a fresh login and returns its exit code and output. */
export async function sshExec(host: SimHost, command: string, opts: SshExecOptions = {}): Promise<RunResult> {
  const timeoutMs = opts.timeoutMs ?? SSH_EXEC_TIMEOUT_MS;
  const client = await sshConnect(host, opts);
  try {
    return await new Promise<RunResult>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new SimError("SIM_TIMEOUT", `${host.alias}: "${command}" over SSH took more than ${timeoutMs} ms`)),
        timeoutMs,
      );
      client.exec(command, (err, stream) => {
        if (err) {
          clearTimeout(timer);
          return reject(err);
        }
        let stdout = "";
        let stderr = "";
        stream.on("data", (d: Buffer) => (stdout += d.toString()));
        stream.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
        stream.on("close", (code: number | null) => {
          clearTimeout(timer);
          resolve({ code: code ?? -1, stdout, stderr });
        });
      });
    });
  } finally {
    client.end();
  }
}

import { Client, ClientChannel, ConnectConfig } from "ssh2";
import { HostKey, hostKeyFromBlob, hostKeyMismatchMessage, parseHostKeyLine } from "./host-key";

/** Where and how to log in; credentials are plain here because this runs inside a provider method. */
export interface SshTarget {
  /** The host's alias in the fleet config: every error names it. */
  readonly alias: string;
  readonly host: string;
  readonly port: number;
  readonly user: string;
  readonly privateKey?: string;
  readonly password?: string;
  readonly agentSocket?: string;
  /** The pinned host key line; when absent the key is accepted only if `allowFirstContact` is true. */
  readonly hostKey?: string;
  readonly allowFirstContact: boolean;
  readonly connectTimeoutS: number;
  /** A bastion to hop through (ssh's ProxyJump); its own key is verified the same way. */
  readonly jump?: SshTarget;
  /** Logins to this host open at once from this process (ssh.maxSessionsPerHost); others wait. */
  readonly maxSessions?: number;
}

/**
 * Sessions per host within this process: every dynamic-provider call of one `pulumi up` runs in the
 * same provider process, so this bounds what the program opens against one sshd (MaxStartups).
 */
const sessionSlots = new Map<string, { open: number; waiting: Array<() => void> }>();

async function acquireSlot(key: string, limit: number): Promise<() => void> {
  const slot = sessionSlots.get(key) ?? { open: 0, waiting: [] };
  sessionSlots.set(key, slot);
  while (slot.open >= limit) await new Promise<void>((resolve) => slot.waiting.push(resolve));
  slot.open++;
  let released = false;
  return () => {
    if (released) return;
    released = true;
    slot.open--;
    slot.waiting.shift()?.();
  };
}

export interface ExecResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export class SshError extends Error {
  constructor(
    readonly code: "NARWHAL_SSH_HOST_KEY" | "NARWHAL_SSH_CONNECT" | "NARWHAL_SSH_TIMEOUT" | "NARWHAL_SSH_EXEC",
    message: string,
  ) {
    super(message);
  }
}

/** One login to one host; run any number of commands over it, then `close()`. */
export class SshSession {
  private constructor(
    private readonly client: Client,
    readonly target: SshTarget,
    /** The key the server presented, verified against the pin or recorded on first contact. */
    readonly hostKey: HostKey,
    private readonly via: SshSession | undefined,
    private readonly release: () => void,
  ) {}

  static async open(target: SshTarget): Promise<SshSession> {
    const release = await acquireSlot(`${target.host}:${target.port}`, target.maxSessions ?? 4);
    let via: SshSession | undefined;
    try {
      via = target.jump ? await SshSession.open(target.jump) : undefined;
      const sock = via ? await via.forward(target.host, target.port) : undefined;
      const { client, hostKey } = await SshSession.handshake(target, sock);
      return new SshSession(client, target, hostKey, via, release);
    } catch (err) {
      via?.close();
      release();
      throw err;
    }
  }

  /** Logins to `host:port` this process has open right now (for tests and diagnostics). */
  static openSessions(host: string, port: number): number {
    return sessionSlots.get(`${host}:${port}`)?.open ?? 0;
  }

  /** A TCP stream to host:port opened from this host (ssh -W): what a local port forward carries. */
  openTcp(host: string, port: number): Promise<NonNullable<ConnectConfig["sock"]>> {
    return this.forward(host, port);
  }

  /** The SFTP subsystem of this login, for writes that must not go through a shell. */
  sftp(): Promise<import("ssh2").SFTPWrapper> {
    return new Promise((resolve, reject) =>
      this.client.sftp((err, sftp) => (err ? reject(new SshError("NARWHAL_SSH_EXEC", `host ${this.target.alias}: cannot open SFTP: ${err.message}`)) : resolve(sftp))),
    );
  }

  /** A TCP stream to host:port opened from this host, for the next hop of a jump. */
  private forward(host: string, port: number): Promise<NonNullable<ConnectConfig["sock"]>> {
    return new Promise((resolve, reject) =>
      this.client.forwardOut("127.0.0.1", 0, host, port, (err, stream) =>
        err ? reject(new SshError("NARWHAL_SSH_CONNECT", `host ${this.target.alias}: cannot open a jump to ${host}:${port}: ${err.message}`)) : resolve(stream),
      ),
    );
  }

  private static async handshake(target: SshTarget, sock?: ConnectConfig["sock"]): Promise<{ client: Client; hostKey: HostKey }> {
    const client = new Client();
    let presented: HostKey | undefined;
    let refusal: string | undefined;
    const pinned = target.hostKey ? parseHostKeyLine(target.hostKey) : undefined;

    const config: ConnectConfig = {
      host: target.host,
      port: target.port,
      username: target.user,
      privateKey: target.privateKey,
      password: target.password,
      agent: target.agentSocket,
      sock,
      readyTimeout: target.connectTimeoutS * 1000,
      hostVerifier: (blob: Buffer) => {
        presented = hostKeyFromBlob(blob);
        if (pinned && pinned.line !== presented.line) {
          refusal = hostKeyMismatchMessage(target.alias, pinned.fingerprint, presented.fingerprint);
          return false;
        }
        if (!pinned && !target.allowFirstContact) {
          refusal =
            `host ${target.alias}: no pinned host key and ssh.allowFirstContact is false; ` +
            `pin hosts[].hostKey (the server presented ${presented.fingerprint}) and run again.`;
          return false;
        }
        return true;
      },
    };

    await new Promise<void>((resolve, reject) => {
      client.once("ready", () => resolve());
      client.once("error", (err: Error & { level?: string }) => {
        if (refusal) reject(new SshError("NARWHAL_SSH_HOST_KEY", refusal));
        else if (/Timed out/.test(err.message))
          reject(new SshError("NARWHAL_SSH_TIMEOUT", `host ${target.alias}: no SSH handshake within ssh.connectTimeoutS=${target.connectTimeoutS}s (${target.host}:${target.port})`));
        else reject(new SshError("NARWHAL_SSH_CONNECT", `host ${target.alias}: SSH login to ${target.user}@${target.host}:${target.port} failed: ${err.message}`));
      });
      client.connect(config);
    });
    return { client, hostKey: presented! };
  }

  /** Runs `command` with an optional stdin; rejects only when the deadline passes or the channel fails. */
  exec(command: string, opts: { stdin?: string; timeoutS: number; name: string }): Promise<ExecResult> {
    return new Promise((resolve, reject) => {
      this.client.exec(command, (err: Error | undefined, channel: ClientChannel) => {
        if (err) return reject(new SshError("NARWHAL_SSH_EXEC", `host ${this.target.alias}: ${opts.name}: ${err.message}`));
        let stdout = "";
        let stderr = "";
        const timer = setTimeout(() => {
          channel.close();
          reject(new SshError("NARWHAL_SSH_TIMEOUT", `host ${this.target.alias}: ${opts.name} did not finish within ${opts.timeoutS}s`));
        }, opts.timeoutS * 1000);
        channel.on("data", (d: Buffer) => (stdout += d.toString("utf8")));
        channel.stderr.on("data", (d: Buffer) => (stderr += d.toString("utf8")));
        channel.on("close", (code: number | null) => {
          clearTimeout(timer);
          resolve({ code: code ?? -1, stdout, stderr });
        });
        channel.end(opts.stdin ?? "");
      });
    });
  }

  /** Like `exec`, but a non-zero exit is an error that names the host, the step and the stderr tail. */
  async run(command: string, opts: { stdin?: string; timeoutS: number; name: string }): Promise<string> {
    const r = await this.exec(command, opts);
    if (r.code !== 0) {
      throw new SshError("NARWHAL_SSH_EXEC", `host ${this.target.alias}: ${opts.name} exited ${r.code}: ${r.stderr.trim().split("\n").slice(-5).join(" | ")}`);
    }
    return r.stdout;
  }

  close(): void {
    this.client.end();
    this.via?.close();
    this.release();
  }
}

/** Opens a session, runs `fn`, and always closes it: one login per host per operation. */
export async function withSsh<T>(target: SshTarget, fn: (s: SshSession) => Promise<T>): Promise<T> {
  const session = await SshSession.open(target);
  try {
    return await fn(session);
  } finally {
    session.close();
  }
}

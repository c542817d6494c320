import { createHash } from "node:crypto";
import { Client, ClientChannel, ConnectConfig } from "ssh2";
import { HostKey, hostKeyFromBlob, hostKeyMismatchMessage, parseHostKeyLine } from "./host-key";
import { LoginProgress } from "./login-progress";
import { configuredHost } from "./configured-hosts";
import { connectionLostMessage, loginClosedMessage, loginFailedMessage, loginTimeoutMessage } from "./messages";
import { SshError } from "./errors";
import type { SshTarget } from "./login";

/**
 * Every dynamic-provider call of one `pulumi up` runs in the same provider process, so what is kept
 * here is shared by the whole operation: one login per host and credential (a pooled connection that
 * every SshSession on that target reuses), and at most `maxSessions` commands running on a host at
 * once (sshd's MaxSessions per connection is 10 by default); the rest wait their turn.
 */
interface PooledConnection {
  readonly client: Client;
  readonly hostKey: HostKey;
  readonly via: SshSession | undefined;
  users: number;
  idleTimer?: NodeJS.Timeout;
  closed: boolean;
}

const connections = new Map<string, Promise<PooledConnection>>();
const commandSlots = new Map<string, { running: number; waiting: Array<() => void> }>();
let loginCount = 0;

/** A kept connection nobody uses is closed after this long; the provider process usually ends first. */
const IDLE_CLOSE_MS = 10_000;

/**
 * An idle kept connection must not hold its process open (the provider host, a test run): its socket
 * is unreferenced while nobody uses it, and the bastion's with it.
 */
function holdProcess(conn: PooledConnection, hold: boolean): void {
  const sock = (conn.client as unknown as { _sock?: { ref?: () => void; unref?: () => void } })._sock;
  if (hold) sock?.ref?.();
  else sock?.unref?.();
  if (conn.via) holdProcess(conn.via.pooled, hold);
}

function poolKey(t: SshTarget): string {
  const jump = t.jump ? poolKey(t.jump) : "";
  return createHash("sha256")
    .update(JSON.stringify([t.host, t.port, t.user, t.privateKey ?? "", t.password ?? "", t.agentSocket ?? "", configuredHost(t.alias)?.hostKey ?? t.hostKey ?? "", t.allowFirstContact, jump]))
    .digest("hex");
}

async function acquireCommandSlot(key: string, limit: number): Promise<() => void> {
  const slot = commandSlots.get(key) ?? { running: 0, waiting: [] };
  commandSlots.set(key, slot);
  while (slot.running >= limit) await new Promise<void>((resolve) => slot.waiting.push(resolve));
  slot.running++;
  let released = false;
  return () => {
    if (released) return;
    released = true;
    slot.running--;
    slot.waiting.shift()?.();
  };
}

export interface ExecResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * One use of a login to one host: run any number of commands over it, then `close()`. Sessions on the
 * same target share one pooled connection (see above); a connection that drops is dialled afresh.
 */
export class SshSession {
  private closed = false;

  private constructor(
    private readonly conn: PooledConnection,
    private readonly key: string,
    readonly target: SshTarget,
  ) {}

  /** The key the server presented, verified against the pin or recorded on first contact. */
  get hostKey(): HostKey {
    return this.conn.hostKey;
  }

  private get client(): Client {
    return this.conn.client;
  }

  /** The shared connection behind this session (for a jump's next hop). */
  get pooled(): PooledConnection {
    return this.conn;
  }

  static async open(target: SshTarget): Promise<SshSession> {
    const key = poolKey(target);
    let pending = connections.get(key);
    const kept = pending && (await pending.catch(() => undefined));
    if (!kept || kept.closed) {
      pending = SshSession.connect(target, key);
      connections.set(key, pending);
      // A failed login is not kept: the next open tries again.
      pending.catch(() => connections.get(key) === pending && connections.delete(key));
    }
    const conn = await pending!;
    conn.users++;
    clearTimeout(conn.idleTimer);
    holdProcess(conn, true);
    return new SshSession(conn, key, target);
  }

  private static async connect(target: SshTarget, key: string): Promise<PooledConnection> {
    let via: SshSession | undefined;
    try {
      via = target.jump ? await SshSession.open(target.jump) : undefined;
      const sock = via ? await via.forward(target.host, target.port) : undefined;
      const { client, hostKey } = await SshSession.handshake(target, sock);
      loginCount++;
      const conn: PooledConnection = { client, hostKey, via, users: 0, closed: false };
      const drop = () => {
        conn.closed = true;
        if (connections.get(key) !== undefined) void connections.get(key)!.then((c) => c === conn && connections.delete(key), () => undefined);
      };
      client.on("close", drop);
      client.on("error", drop);
      return conn;
    } catch (err) {
      via?.close();
      throw err;
    }
  }

  /** SSH logins this process has made so far (for tests and diagnostics). */
  static loginsMade(): number {
    return loginCount;
  }

  /** Commands running on `host:port` from this process right now (for tests and diagnostics). */
  static runningCommands(host: string, port: number): number {
    return commandSlots.get(`${host}:${port}`)?.running ?? 0;
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
    const { alias, connectTimeoutS } = this.target;
    return new Promise((resolve, reject) => {
      // sshd on this host dials host:port itself and answers only once that connect ends, which for an
      // address that drops packets is the kernel's TCP timeout (minutes): bound it like a login.
      let late = false;
      const deadline = setTimeout(() => {
        late = true;
        reject(
          new SshError(
            "NARWHAL_SSH_TIMEOUT",
            `host ${alias}: cannot open a jump to ${host}:${port} within ssh.connectTimeoutS=${connectTimeoutS}s; check that ${host}:${port} is reachable from ${alias}`,
          ),
        );
      }, connectTimeoutS * 1000);
      try {
        this.client.forwardOut("127.0.0.1", 0, host, port, (err, stream) => {
          clearTimeout(deadline);
          if (late) stream?.end(); // the caller gave up on it already
          else if (err) reject(new SshError("NARWHAL_SSH_CONNECT", `host ${alias}: cannot open a jump to ${host}:${port}: ${err.message}; check that ${host}:${port} is reachable from ${alias}`));
          else resolve(stream);
        });
      } catch (err) {
        clearTimeout(deadline);
        reject(new SshError("NARWHAL_SSH_LOST", `host ${alias}: the SSH connection was lost before a jump to ${host}:${port} could open: ${(err as Error).message}; run again`));
      }
    });
  }

  private static async handshake(target: SshTarget, sock?: ConnectConfig["sock"]): Promise<{ client: Client; hostKey: HostKey }> {
    const client = new Client();
    let presented: HostKey | undefined;
    let refusal: string | undefined;
    // The key pinned in the config now outranks the one a resource's old inputs carry (a refresh after a re-pin).
    const configured = configuredHost(target.alias);
    const pinLine = configured?.hostKey ?? target.hostKey;
    const pinned = pinLine ? parseHostKeyLine(pinLine) : undefined;

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
          refusal = hostKeyMismatchMessage(target.alias, pinned.fingerprint, presented.fingerprint, { presentedLine: presented.line, index: configured?.index, listAsText: configured?.listAsText });
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

    // ssh2 emits neither `ready` nor `error` when the server closes cleanly (before or after its banner),
    // and its readyTimeout stops at that close: without `close`/`end` and a timer of our own, a login
    // (and every later login to the host, which waits on the same pooled promise) would hang for good.
    await new Promise<void>((resolve, reject) => {
      const progress = new LoginProgress(client, sock !== undefined);
      let settled = false;
      const fail = (code: SshError["code"], what: string) => {
        if (settled) return;
        settled = true;
        clearTimeout(deadline);
        client.destroy();
        reject(new SshError(code, what));
      };
      const deadline = setTimeout(() => fail("NARWHAL_SSH_TIMEOUT", loginTimeoutMessage(target, progress.stage)), target.connectTimeoutS * 1000);
      client.once("ready", () => {
        if (settled) return;
        settled = true;
        clearTimeout(deadline);
        resolve();
      });
      // Kept for the connection's whole life: an `error` with no listener would crash the provider.
      client.on("error", (err: Error) => {
        if (refusal) fail("NARWHAL_SSH_HOST_KEY", refusal);
        else if (/Timed out/.test(err.message)) fail("NARWHAL_SSH_TIMEOUT", loginTimeoutMessage(target, progress.stage));
        // ssh2's word for a close before its key exchange: the same close as below, said the same way.
        else if (/Connection lost before handshake/.test(err.message)) fail("NARWHAL_SSH_CONNECT", loginClosedMessage(target, progress.stage));
        else fail("NARWHAL_SSH_CONNECT", loginFailedMessage(target, err.message));
      });
      client.once("end", () => fail("NARWHAL_SSH_CONNECT", loginClosedMessage(target, progress.stage)));
      client.once("close", () => fail("NARWHAL_SSH_CONNECT", loginClosedMessage(target, progress.stage)));
      client.connect(config);
      progress.watchSocket();
    });
    return { client, hostKey: presented! };
  }

  /** Runs `command` with an optional stdin; rejects only when the deadline passes or the channel fails. */
  async exec(command: string, opts: { stdin?: string; timeoutS: number; name: string }): Promise<ExecResult> {
    if (this.closed) throw new SshError("NARWHAL_SSH_EXEC", `host ${this.target.alias}: ${opts.name}: the SSH session was already closed`);
    const release = await acquireCommandSlot(`${this.target.host}:${this.target.port}`, this.target.maxSessions ?? 4);
    try {
      return await this.execNow(command, opts);
    } finally {
      release();
    }
  }

  private execNow(command: string, opts: { stdin?: string; timeoutS: number; name: string }): Promise<ExecResult> {
    return new Promise((resolve, reject) => {
      const lost = () => new SshError("NARWHAL_SSH_LOST", connectionLostMessage(this.target, opts.name));
      const started = (err: Error | undefined, channel: ClientChannel) => {
        if (err) return reject(this.conn.closed ? lost() : new SshError("NARWHAL_SSH_EXEC", `host ${this.target.alias}: ${opts.name}: ${err.message}`));
        let stdout = "";
        let stderr = "";
        const timer = setTimeout(() => {
          channel.close();
          reject(new SshError("NARWHAL_SSH_TIMEOUT", `host ${this.target.alias}: ${opts.name} did not finish within ${opts.timeoutS}s`));
        }, opts.timeoutS * 1000);
        channel.on("data", (d: Buffer) => (stdout += d.toString("utf8")));
        channel.stderr.on("data", (d: Buffer) => (stderr += d.toString("utf8")));
        // ssh2 closes the channel with the exit status, with `null` and a signal name when the command
        // was killed, and with nothing at all when neither arrived: the connection went away under it.
        channel.on("close", (code: number | null | undefined) => {
          clearTimeout(timer);
          if (code === undefined) reject(lost());
          else resolve({ code: code ?? -1, stdout, stderr });
        });
        channel.end(opts.stdin ?? "");
      };
      try {
        this.client.exec(command, started);
      } catch {
        // ssh2 throws "Not connected" when the kept connection dropped between sessions.
        reject(lost());
      }
    });
  }

  /** Like `exec`, but a non-zero exit is an error that names the host, the step and the stderr tail. */
  async run(command: string, opts: { stdin?: string; timeoutS: number; name: string }): Promise<string> {
    const r = await this.exec(command, opts);
    if (r.code !== 0) {
      throw new SshError("NARWHAL_SSH_EXEC", `host ${this.target.alias}: ${opts.name} exited ${r.code}: ${r.stderr.trim().split("\n").slice(-5).join(" | ")}`, r.code);
    }
    return r.stdout;
  }

  /** Ends this use; the connection stays for the next session on the same target until it idles out. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    const conn = this.conn;
    if (--conn.users > 0 || conn.closed) return;
    conn.idleTimer = setTimeout(() => {
      if (conn.users > 0) return;
      conn.closed = true;
      if (connections.get(this.key)) void connections.get(this.key)!.then((c) => c === conn && connections.delete(this.key), () => undefined);
      conn.client.end();
      conn.via?.close();
    }, IDLE_CLOSE_MS);
    // A kept connection never holds the process open.
    conn.idleTimer.unref();
    holdProcess(conn, false);
  }
}

/** Opens a session, runs `fn`, and always closes it (the login itself stays pooled for the operation). */
export async function withSsh<T>(target: SshTarget, fn: (s: SshSession) => Promise<T>): Promise<T> {
  const session = await SshSession.open(target);
  try {
    return await fn(session);
  } finally {
    session.close();
  }
}

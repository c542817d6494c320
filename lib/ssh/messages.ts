/**
 * What a failed login or a lost connection says. The first line names the host alias and address and
 * what to do, because that line is often all an operator sees of a failed `pulumi up`.
 */
import type { LoginStage } from "./login-progress";

interface Where {
  readonly alias: string;
  readonly host: string;
  readonly port: number;
  readonly user: string;
  readonly jump?: { readonly alias: string };
}

/** `ssh to sim1 (198.18.0.11:22)`, or `... via bastion` when the login hops through a jump host. */
export function sshTo(t: Where): string {
  return `ssh to ${t.alias} (${t.host}:${t.port}${t.jump ? ` via ${t.jump.alias}` : ""})`;
}

const CLOSED_AT: Record<LoginStage, (t: Where) => string> = {
  connecting: (t) => `the connection closed before TCP connected; check that the host is up and that port ${t.port} is reachable from here`,
  connected: (t) =>
    `the server closed the connection before login, without sending an SSH banner; check that sshd (and not another service) ` +
    `listens on port ${t.port} and accepts connections from here (firewall, TCP wrappers, sshd MaxStartups)`,
  banner: (t) =>
    `the server closed the connection before login, after its SSH banner; check that sshd runs and accepts this client ` +
    `and user ${t.user} (sshd's log on the host says why it dropped the connection)`,
  authenticating: (t) =>
    `the server closed the connection during login as ${t.user}; check that sshd accepts this user and its key or password ` +
    `(sshd's log on the host says why)`,
};

const WAITING_FOR: Record<LoginStage, string> = {
  connecting: "TCP never connected",
  connected: "connected, but no SSH banner came",
  banner: "the SSH banner came, but key exchange never finished",
  authenticating: "keys were exchanged, but login never finished",
};

/** The server (or the network) closed the connection before the login finished. */
export function loginClosedMessage(t: Where, stage: LoginStage): string {
  return `${sshTo(t)}: ${CLOSED_AT[stage](t)}`;
}

/** No login within `ssh.connectTimeoutS`; nothing is kept, so the next attempt dials afresh. */
export function loginTimeoutMessage(t: Where & { readonly connectTimeoutS: number }, stage: LoginStage): string {
  return (
    `${sshTo(t)}: no SSH login within ssh.connectTimeoutS=${t.connectTimeoutS}s (${WAITING_FOR[stage]}); ` +
    `check that the host is up and sshd answers on port ${t.port}, or raise ssh.connectTimeoutS`
  );
}

/** ssh2 reported an error of its own (refused, unreachable, authentication failed, ...). */
export function loginFailedMessage(t: Where, cause: string): string {
  return `${sshTo(t)}: login as ${t.user} failed: ${cause}; check the address, port and credentials for this host`;
}

/** The connection went away while a command ran, or before it could start: no exit status came back. */
export function connectionLostMessage(t: Where, step: string): string {
  return (
    `host ${t.alias}: the SSH connection (${t.host}:${t.port}) was lost during ${step}, before it reported an exit status; ` +
    `check that the host and its sshd are up, then run again`
  );
}

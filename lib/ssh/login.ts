import { SshError } from "./errors";

/**
 * How to log in to one host: the only login shape. Components resolve it from the config
 * (lib/fleet/host-plan.ts), providers read it back from their inputs (./stored-login.ts), and `sshTarget`
 * turns it into what the SSH client dials.
 */
export interface HostLogin {
  /** The host's alias in the fleet config (a bastion outside the fleet: `jump user@host`): every error names it. */
  readonly alias: string;
  readonly host: string;
  readonly port: number;
  readonly user: string;
  /** The pinned host key line: the config's `hosts[].hostKey`, or the key discovery verified. */
  readonly hostKey?: string;
  /** Secret; plain only inside a provider call. */
  readonly privateKey?: string;
  /** Secret; plain only inside a provider call. */
  readonly password?: string;
  /** An ssh-agent socket to authenticate with. */
  readonly agentSocket?: string;
  /** An IdentityFile the operator's ssh_config names: where the key is read from when no key secret is configured. */
  readonly identityFile?: string;
  /** Bound on one login (ssh.connectTimeoutS), and on opening the next hop through this host. */
  readonly connectTimeoutS: number;
  /** Commands running on this host at once from this process (ssh.maxSessionsPerHost); others wait. */
  readonly maxSessions?: number;
  /** A bastion to hop through (ssh's ProxyJump); without credentials of its own it is logged in to with the host's. */
  readonly jump?: HostLogin;
}

/** A login with its first-contact policy decided: what the SSH client (./client.ts) dials. */
export interface SshTarget extends HostLogin {
  /** Whether a key the server presents may be accepted (and learned) when `hostKey` is absent. */
  readonly allowFirstContact: boolean;
  readonly jump?: SshTarget;
}

/** Why a login is made: this alone decides what happens when a host or its bastion has no pinned key. */
export type LoginPurpose =
  /** Gate A's discovery, the login that records the host's key: first contact as `ssh.allowFirstContact` says. */
  | { readonly kind: "discover"; readonly allowFirstContact: boolean }
  /** Every login after discovery: to the key discovery verified. */
  | { readonly kind: "operate" }
  /** A login that may learn nothing (a preview; the docker provider's ssh, run with StrictHostKeyChecking=yes); `why` says so in refusals. */
  | { readonly kind: "pinned"; readonly why: string };

/** Which unpinned keys the login may accept on first contact. */
export interface FirstContact {
  readonly host: boolean;
  readonly jump: boolean;
}

/**
 * The first-contact policy, in one place. A pinned key is always verified. An unpinned one:
 *
 * | purpose  | host                                         | bastion                                      |
 * |----------|----------------------------------------------|----------------------------------------------|
 * | discover | learned if ssh.allowFirstContact, else the   | the same                                     |
 * |          | handshake refuses naming the presented key   |                                              |
 * | operate  | refused before dialling: discovery's key is  | accepted: discovery already met it under     |
 * |          | missing, so nothing verified this host       | ssh.allowFirstContact, nothing records a     |
 * |          |                                              | bastion's key, and the host behind it is     |
 * |          |                                              | still verified end to end                    |
 * | pinned   | refused before dialling                      | refused before dialling                      |
 *
 * Refusals throw an SshError `NARWHAL_SSH_HOST_KEY` that names the host and the fix.
 */
export function firstContact(login: Pick<HostLogin, "alias" | "hostKey" | "jump">, purpose: LoginPurpose): FirstContact {
  const jump = login.jump;
  switch (purpose.kind) {
    case "discover":
      return { host: !login.hostKey && purpose.allowFirstContact, jump: !!jump && !jump.hostKey && purpose.allowFirstContact };
    case "operate":
      if (!login.hostKey) {
        throw new SshError(
          "NARWHAL_SSH_HOST_KEY",
          `host ${login.alias}: no verified host key to log in with; it comes from the host's discovery, so run pulumi up --refresh to record it again.`,
        );
      }
      return { host: false, jump: !!jump && !jump.hostKey };
    case "pinned":
      if (!login.hostKey) throw new SshError("NARWHAL_SSH_HOST_KEY", `host ${login.alias}: no pinned host key, and ${purpose.why}; pin hosts[].hostKey and run again.`);
      if (jump && !jump.hostKey) {
        throw new SshError(
          "NARWHAL_SSH_HOST_KEY",
          `host ${login.alias}: its bastion ${jump.alias} (${jump.user}@${jump.host}:${jump.port}) has no pinned host key, and ${purpose.why}; ` +
            `make the bastion a host of the fleet with hosts[].hostKey pinned and run again.`,
        );
      }
      return { host: false, jump: false };
  }
}

/** The SSH client's target for `login`, made for `purpose` (see `firstContact`); throws when the policy refuses. */
export function sshTarget(login: HostLogin, purpose: LoginPurpose): SshTarget {
  const learn = firstContact(login, purpose);
  const { jump, identityFile: _file, ...host } = login;
  return {
    ...host,
    allowFirstContact: learn.host,
    ...(jump
      ? {
          jump: {
            alias: jump.alias,
            host: jump.host,
            port: jump.port,
            user: jump.user,
            hostKey: jump.hostKey,
            privateKey: jump.privateKey ?? login.privateKey,
            password: jump.password ?? login.password,
            agentSocket: jump.agentSocket ?? login.agentSocket,
            connectTimeoutS: jump.connectTimeoutS,
            maxSessions: jump.maxSessions,
            allowFirstContact: learn.jump,
          },
        }
      : {}),
  };
}

/** The purpose of every login after discovery. */
export const OPERATE: LoginPurpose = { kind: "operate" };

/**
 * One `docker.Provider` per engine host, reaching the host's Docker daemon over SSH with the host key
 * discovery verified pinned.
 *
 * How the pinned key reaches ssh: @pulumi/docker (terraform-provider-docker, through docker/cli's
 * connection helper) does not speak SSH itself. For an `ssh://user@host:port` daemon it spawns the
 * LOCAL `ssh` client, `ssh <sshOpts> -l user -p port -- host docker system dial-stdio`, and talks to the
 * daemon over that process's stdin/stdout. So the key can only be pinned through ssh's own options:
 *   - the key discovery verified (the connection's `hostKey`) goes into a known_hosts file of the
 *     program's own, one per host, `[host]:port <type> <base64>` (plus the bastion's pinned key, if any);
 *   - `sshOpts` make that file the only one ssh consults (`UserKnownHostsFile=<file>`,
 *     `GlobalKnownHostsFile=/dev/null`), make a missing or different key fatal
 *     (`StrictHostKeyChecking=yes`), never let ssh rewrite it (`UpdateHostKeys=no`) and never prompt
 *     (`BatchMode=yes`: no password or "continue connecting?" question can hang a deployment).
 * The file is written inside the `apply` that yields `sshOpts`, so the provider, which is configured
 * with the resolved `sshOpts`, cannot dial before the file holds the pinned key. Components do no I/O:
 * the write is the `knownHosts.write` the program's entry hands down (entry/known-hosts.ts), called in
 * that same apply. `pulumi destroy` does not run the program and uses the `sshOpts` kept in state, so
 * the file lives in a stable folder (`runs/<stack>/ssh`, ignored by git, chosen by the entry) and is rewritten on
 * every preview and up.
 *
 * Authentication is ssh's too: the operator's agent or an ssh_config identity. The program never writes
 * a private key to disk, and password logins cannot work (BatchMode).
 */
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import * as docker from "@pulumi/docker";
import type * as command from "@pulumi/command";
import { parseHostKeyLine } from "../../lib/ssh/host-key";
import { firstContact, type HostLogin, type LoginPurpose } from "../../lib/ssh/login";
import { readLogin, storedLoginOf, type ConnectionFields } from "../../lib/ssh/stored-login";
import { shq } from "../../lib/shell";
import type { HostScope, KnownHostsFiles } from "./types";

/** The docker provider's ssh can learn no key: a host or bastion without a pin is refused (lib/ssh/login.ts). */
const DOCKER_SSH: LoginPurpose = { kind: "pinned", why: "the docker provider's ssh is only ever run with StrictHostKeyChecking=yes" };

/** The login (no credentials) out of a resolved connection, with its keys normalised; throws when a key to pin is missing. */
export function dockerLogin(hostAlias: string, c: ConnectionFields): HostLogin {
  const login = readLogin(storedLoginOf(c), { alias: hostAlias });
  firstContact(login, DOCKER_SSH);
  const pinned = (l: HostLogin): HostLogin => ({ ...l, hostKey: parseHostKeyLine(l.hostKey!).line });
  return { ...pinned(login), jump: login.jump && pinned(login.jump) };
}

function bracketed(host: string): string {
  return host.includes(":") ? `[${host}]` : host;
}

/** `ssh://user@host:port` (IPv6 addresses in brackets). */
export function dockerHostUrl(login: Pick<HostLogin, "host" | "port" | "user" | "hostKey">): string {
  return `ssh://${login.user}@${bracketed(login.host)}:${login.port}`;
}

/** How OpenSSH names a host in known_hosts: bare on port 22, `[host]:port` otherwise. */
function knownHostsName(host: string, port: number): string {
  return port === 22 ? host : `[${host}]:${port}`;
}

/** The known_hosts text: the host's pinned key, and the bastion's when there is one (`dockerLogin` made sure of both). */
export function knownHostsText(login: HostLogin): string {
  const lines = [`${knownHostsName(login.host, login.port)} ${login.hostKey}`];
  if (login.jump) lines.push(`${knownHostsName(login.jump.host, login.jump.port)} ${login.jump.hostKey}`);
  return lines.join("\n") + "\n";
}

/** The ssh options every connection of the docker provider (and its bastion hop) runs with. */
function pinningOpts(knownHostsFile: string): string[] {
  return [
    "-o", "StrictHostKeyChecking=yes",
    "-o", `UserKnownHostsFile=${knownHostsFile}`,
    "-o", "GlobalKnownHostsFile=/dev/null",
    "-o", "UpdateHostKeys=no",
    "-o", "CheckHostIP=no",
    "-o", "BatchMode=yes",
  ];
}

/**
 * The provider's `sshOpts`: argv words appended to its `ssh` command line. A bastion is reached with a
 * ProxyCommand rather than ProxyJump, because ssh does not pass `-o` options on to a ProxyJump hop, and
 * the hop's key must be pinned too.
 */
export function dockerSshOpts(knownHostsFile: string, login: HostLogin): string[] {
  const opts = pinningOpts(knownHostsFile);
  opts.push("-o", `ConnectTimeout=${login.connectTimeoutS}`);
  if (login.jump) {
    const hop = ["ssh", ...pinningOpts(knownHostsFile), "-p", String(login.jump.port), "-l", login.jump.user, "-W", "%h:%p", "--", login.jump.host];
    // ssh runs a ProxyCommand through the shell: every word is quoted except ssh's own %h:%p tokens.
    opts.push("-o", `ProxyCommand=${hop.map((w) => (w === "%h:%p" ? w : shq(w))).join(" ")}`);
  }
  return opts;
}

interface HostProvider {
  readonly provider: docker.Provider;
  readonly hostAlias: string;
}

/** Providers made so far, per owning component; a new Fleet (or a new test) starts with none. */
const made = new WeakMap<pulumi.Resource, Map<string, HostProvider>>();

/**
 * The docker provider of one host: made by the first engine on the host, reused by the others. Its
 * name is `<scope.name>-docker` and its parent `scope.parent`, so neither depends on which engine came first.
 */
export function dockerHostProvider(
  scope: HostScope,
  hostAlias: string,
  connection: pulumi.Input<command.types.input.remote.ConnectionArgs>,
  knownHosts: KnownHostsFiles,
): docker.Provider {
  const name = `${scope.name}-docker`;
  const byName = made.get(scope.parent) ?? new Map<string, HostProvider>();
  made.set(scope.parent, byName);
  const existing = byName.get(name);
  if (existing) {
    if (existing.hostAlias !== hostAlias) throw new Error(`docker provider ${name} is for host ${existing.hostAlias}, not ${hostAlias}: give each host its own scope name`);
    return existing.provider;
  }
  if (!path.isAbsolute(knownHosts.dir)) throw new Error(`docker backend: known_hosts folder ${JSON.stringify(knownHosts.dir)} must be absolute`);
  const knownHostsFile = path.join(knownHosts.dir, `${name.replace(/[^A-Za-z0-9._-]/g, "_")}.known_hosts`);
  // Only host, port, user and public keys are read out of the connection, so no secret is taken along.
  const login = pulumi.unsecret(pulumi.output(connection).apply((c) => dockerLogin(hostAlias, c as ConnectionFields)));
  const provider = new docker.Provider(
    name,
    {
      host: login.apply(dockerHostUrl),
      sshOpts: login.apply((l) => {
        knownHosts.write(knownHostsFile, knownHostsText(l));
        return dockerSshOpts(knownHostsFile, l);
      }),
    },
    { parent: scope.parent },
  );
  byName.set(name, { provider, hostAlias });
  return provider;
}

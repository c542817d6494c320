/** `narwhal-fleet:hosts[]`: one SSH-reachable machine. */
import { PROGRAM_DEFAULTS as P } from "../defaults";
import { show } from "../describe";
import * as f from "../fields";
import * as fmt from "../formats";

const hostKey = f.text(`a public key line "<type> <base64>"`, fmt.hostKeyProblem).transform(fmt.normalizeHostKey);

export const HostSchema = f.strict(
  {
    /** Short unique name: engines, `jump` and `router.host` refer to the host by it. */
    alias: f.matching(fmt.ALIAS_PATTERN, fmt.ALIAS_RULE),
    /** Where to log in: `"user@host"`, `"host"` or an ssh_config alias. The port goes in `port`. */
    destination: f.text(`an SSH destination: "user@host", "host" or an ssh_config alias`, (s) => {
      const parsed = fmt.parseDestination(s, false);
      return parsed.ok ? undefined : `${parsed.problem}; expected "user@host", "host" or an ssh_config alias`;
    }),
    /** SSH port. */
    port: f.port().default(P.sshPort),
    /** Login user; defaults to the user in `destination`, else `root`. */
    user: f.matching(/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}$/, "a login name (e.g. \"ubuntu\")").optional(),
    /**
     * Credential kind: `key` uses the `sshPrivateKeys.<alias>` secret or else the stack's `sshPrivateKey`;
     * `password` uses the `sshPasswords.<alias>` secret; `agent` uses the local SSH agent.
     */
    auth: f.choice(["key", "password", "agent"]).default("key"),
    /**
     * Pinned server public key, `"<type> <base64>"` (a trailing comment is dropped). Without it the key
     * seen on first contact is recorded, if `ssh.allowFirstContact` allows that.
     */
    hostKey: hostKey.optional(),
    /** Reach the host through another: the alias of a host in `hosts`, or `"user@host[:port]"`. */
    jump: f
      .text(`the alias of another host, or "user@host[:port]"`, (s) => {
        if (fmt.ALIAS_PATTERN.test(s)) return undefined; // an alias; that it exists is checked in rules.ts
        const parsed = fmt.parseDestination(s, true);
        if (parsed.ok && parsed.value.user !== undefined) return undefined;
        return `found ${show(s)}; expected the alias of another host in hosts, or "user@host[:port]"`;
      })
      .optional(),
    /** Interface carrying engine, NIXL and UCX traffic; defaults to `fabric.interface`. */
    fabricInterface: f.matching(fmt.INTERFACE_PATTERN, fmt.INTERFACE_RULE).optional(),
    /** Which global address of the fabric interface to use, when it has several. */
    fabricAddress: f.text("an IPv4 or IPv6 address", fmt.ipProblem).optional(),
    /** Host part of the engine and attestation URLs, when they are reached through another address. */
    urlHost: f.text("a host name or IP address", fmt.urlHostProblem).optional(),
    /**
     * Where this program keeps each stack's run folders on the host (engines, sidecars, router, install).
     * A login that is not root needs a directory it can write, e.g. under its home.
     */
    stateDir: f.text('an absolute path (e.g. "/var/lib/narwhal-fleet")', (s) => fmt.absolutePathProblem(s, "/home/narwhal/.narwhal-fleet")).default("/var/lib/narwhal-fleet"),
    /**
     * Keep this stack's folder under `stateDir` (engine logs, launch files, attestation documents, the
     * router's fleet document and profile store, monitoring data) when the stack is destroyed. By default
     * `pulumi destroy` removes it; the evidence under runs/ on this machine is kept either way.
     */
    retainOnDestroy: f.flag().default(false),
    /** Accelerator vendor discovery must find on this host. */
    accelerator: f.choice(["nvidia", "amd", "none"]).optional(),
  },
  "a host object {alias, destination, ...}",
);

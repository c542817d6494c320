/** `narwhal-fleet:hosts[]`: one SSH-reachable machine. */
import { PROGRAM_DEFAULTS as P } from "../defaults";
import { show } from "../describe";
import * as f from "../fields";
import * as fmt from "../formats";

const hostKey = f.text(`a public key line "<type> <base64>"`, fmt.hostKeyProblem).transform(fmt.normalizeHostKey);

export const HostSchema = f.strict(
  {
    alias: f.matching(fmt.ALIAS_PATTERN, fmt.ALIAS_RULE).describe("Short unique name: engines, `jump` and `router.host` refer to the host by it."),
    destination: f
      .text(`an SSH destination: "user@host", "host" or an ssh_config alias`, (s) => {
        const parsed = fmt.parseDestination(s, false);
        return parsed.ok ? undefined : `${parsed.problem}; expected "user@host", "host" or an ssh_config alias`;
      })
      .describe("Where to log in: `user@host`, `host` or an ssh_config alias (see `ssh.configFile`). The port goes in `port`."),
    port: f.port().default(P.sshPort).describe("SSH port."),
    user: f
      .matching(/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}$/, "a login name (e.g. \"ubuntu\")")
      .optional()
      .meta({ description: "Login user.", defaultText: "the user in `destination`, else `root`" }),
    auth: f
      .choice(["key", "password", "agent"])
      .default("key")
      .describe(
        "Credential kind: `key` uses the `sshPrivateKeys.<alias>` secret or else the stack's `sshPrivateKey`; " +
          "`password` uses the `sshPasswords.<alias>` secret; `agent` uses the local SSH agent.",
      ),
    hostKey: hostKey
      .optional()
      .describe(
        "Pinned server public key, `<type> <base64>` (a trailing comment is dropped). Without it the key seen on " +
          "first contact is recorded, if `ssh.allowFirstContact` allows that.",
      ),
    jump: f
      .text(`the alias of another host, or "user@host[:port]"`, (s) => {
        if (fmt.ALIAS_PATTERN.test(s)) return undefined; // an alias; that it exists is checked in rules.ts
        const parsed = fmt.parseDestination(s, true);
        if (parsed.ok && parsed.value.user !== undefined) return undefined;
        return `found ${show(s)}; expected the alias of another host in hosts, or "user@host[:port]"`;
      })
      .optional()
      .describe("Reach the host through another: the alias of a host in `hosts`, or `user@host[:port]`."),
    fabricInterface: f
      .matching(fmt.INTERFACE_PATTERN, fmt.INTERFACE_RULE)
      .optional()
      .meta({ description: "Interface carrying engine, NIXL and UCX traffic.", defaultText: "`fabric.interface`" }),
    fabricAddress: f
      .text("an IPv4 or IPv6 address", fmt.ipProblem)
      .optional()
      .describe("Which global address of the fabric interface to use, when it has several."),
    urlHost: f
      .text("a host name or IP address", fmt.urlHostProblem)
      .optional()
      .describe("Host part of the engine and attestation URLs, when they are reached through another address."),
    stateDir: f
      .text('an absolute path (e.g. "/var/lib/narwhal-fleet")', (s) => fmt.absolutePathProblem(s, "/home/narwhal/.narwhal-fleet"))
      .default("/var/lib/narwhal-fleet")
      .describe(
        "Where the stack's run folders (engines, sidecars, router, install) live on the host. A login that is not " +
          "root needs a directory it can write, e.g. under its home.",
      ),
    retainOnDestroy: f
      .flag()
      .default(false)
      .describe(
        "Keep this stack's folder under `stateDir` (engine logs, launch files, attestation documents, the router's " +
          "fleet document and profile store, monitoring data) on `pulumi destroy`. By default destroy removes it; " +
          "the evidence under `runs/` on this machine is kept either way.",
      ),
    accelerator: f.choice(["nvidia", "amd", "none"]).optional().describe("Accelerator vendor discovery must find on this host."),
  },
  "a host object {alias, destination, ...}",
);

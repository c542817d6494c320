/**
 * Broken `hosts` entries. Each case asserts the path and the full message: what was found, what is
 * allowed, the fix.
 */
import { ed25519Line, rejectsEach, type BadCase } from "./fixtures";

const CASES: BadCase[] = [
  {
    name: "missing hosts",
    edit: (c) => delete c.hosts,
    issues: [
      [
        "hosts",
        'missing; set it to a list of at least one host, e.g. [{alias: "gpu-a", destination: "root@10.0.0.5", fabricInterface: "eth1"}]',
      ],
    ],
  },
  {
    name: "hosts that are not a list",
    edit: (c) => (c.hosts = { a: "10.0.0.1" }),
    issues: [["hosts", 'found {"a":"10.0.0.1"}, which is an object; expected a list of hosts']],
  },
  {
    name: "duplicate alias",
    edit: (c) => (c.hosts[1].alias = "a"),
    issues: [
      // One fix: engines[1] is not told to move to "a", the duplicated host.
      [
        "hosts[1].alias",
        '"a" is already the alias of hosts[0]; give every host its own alias (engines[1].host names "b", which no host has: if this host is "b", that fixes both)',
      ],
    ],
  },
  {
    name: "duplicate alias with the router and a jump on the lost alias",
    edit: (c) => {
      c.hosts.push({ alias: "a", destination: "10.0.0.3", fabricInterface: "eth1" });
      c.hosts[1].alias = "c";
      c.hosts[1].jump = "b";
      c.router = { host: "b" };
    },
    issues: [
      [
        "hosts[2].alias",
        '"a" is already the alias of hosts[0]; give every host its own alias (engines[1].host names "b", router.host names "b", hosts[1].jump names "b", which no host has: if this host is "b", that fixes both)',
      ],
    ],
  },
  {
    name: "bad alias characters",
    edit: (c) => {
      c.hosts[0].alias = "GPU_a";
      c.engines[0].host = "GPU_a";
    },
    issues: [
      ["hosts[0].alias", 'found "GPU_a"; allowed: a lowercase letter followed by up to 30 lowercase letters, digits or "-" (e.g. "gpu-a")'],
    ],
  },
  {
    name: "bad port number",
    edit: (c) => (c.hosts[0].port = 70000),
    issues: [["hosts[0].port", "found 70000; allowed: an integer from 1 to 65535"]],
  },
  {
    name: "a port given as a string",
    edit: (c) => (c.hosts[0].port = "2222"),
    issues: [["hosts[0].port", 'found "2222", which is a string; expected an integer from 1 to 65535']],
  },
  {
    name: "a destination that ssh would read as an option",
    edit: (c) => (c.hosts[0].destination = "-oProxyCommand=sh"),
    issues: [
      [
        "hosts[0].destination",
        'found "-oProxyCommand=sh": it starts with "-", which ssh would read as an option; expected "user@host", "host" or an ssh_config alias',
      ],
    ],
  },
  {
    name: "a destination with a port in it",
    edit: (c) => (c.hosts[0].destination = "root@10.0.0.1:2222"),
    issues: [
      [
        "hosts[0].destination",
        `found "root@10.0.0.1:2222": it includes a port; put the port in the host's port key instead; expected "user@host", "host" or an ssh_config alias`,
      ],
    ],
  },
  {
    name: "a user that contradicts the destination",
    edit: (c) => (c.hosts[0].user = "ubuntu"),
    issues: [["hosts[0].user", '"ubuntu" differs from the user "root" in destination "root@10.0.0.1"; remove one of them']],
  },
  {
    name: "a host without fabric interface and no fleet-wide one",
    edit: (c) => delete c.hosts[1].fabricInterface,
    issues: [
      [
        "hosts[1].fabricInterface",
        'missing for host b, and fabric.interface is not set; set hosts[1].fabricInterface or fabric.interface to the interface that carries engine traffic (e.g. "eth1")',
      ],
    ],
  },
  {
    name: "allowFirstContact false without hostKey",
    edit: (c) => {
      c.ssh = { allowFirstContact: false };
      c.hosts[0].hostKey = ed25519Line();
    },
    issues: [
      [
        "hosts[1].hostKey",
        'missing for host b, and ssh.allowFirstContact is false; pin the host\'s public key (e.g. "ssh-ed25519 AAAA…" from /etc/ssh/ssh_host_ed25519_key.pub) or set ssh.allowFirstContact to true',
      ],
    ],
  },
  {
    name: "malformed hostKey",
    edit: (c) => (c.hosts[0].hostKey = "ssh-ed25519 AAAA"),
    issues: [
      [
        "hosts[0].hostKey",
        `the key data of "ssh-ed25519 AAAA" does not hold an ssh-ed25519 key; copy the whole line from the host's /etc/ssh/ssh_host_*_key.pub`,
      ],
    ],
  },
  {
    name: "a hostKey copied from known_hosts with its host name",
    edit: (c) => (c.hosts[0].hostKey = `10.0.0.1 ${ed25519Line()}`),
    issues: [
      [
        "hosts[0].hostKey",
        // The found value is shown cut to 57 characters of its JSON form.
        `found ${JSON.stringify(`10.0.0.1 ${ed25519Line()}`).slice(0, 57)}…: starts with the host name "10.0.0.1"; drop it and keep "<type> <base64>", ` +
          "type ssh-ed25519, ecdsa-sha2-nistp256/384/521 or ssh-rsa (the host's /etc/ssh/ssh_host_*_key.pub, or an `ssh-keyscan` line without its host name)",
      ],
    ],
  },
  {
    name: "a private key pasted as hostKey (never echoed)",
    edit: (c) => (c.hosts[0].hostKey = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----"),
    issues: [
      [
        "hosts[0].hostKey",
        "looks like a private key; never put a private key in plain config: keep it in the sshPrivateKey secret and pin the host's public key here",
      ],
    ],
  },
  {
    name: "jump cycle",
    edit: (c) => {
      c.hosts[0].jump = "b";
      c.hosts[1].jump = "a";
    },
    issues: [["hosts[0].jump", "jump chain a -> b -> a loops and never reaches a host; remove the jump of one of these hosts"]],
  },
  {
    name: "jump to an unknown alias",
    edit: (c) => (c.hosts[1].jump = "bastion"),
    issues: [
      [
        "hosts[1].jump",
        '"bastion" is not the alias of any host; known aliases: a, b; for a machine outside the fleet write "user@host[:port]"',
      ],
    ],
  },
  {
    name: "engine hosts with different accelerators",
    edit: (c) => {
      c.hosts[0].accelerator = "nvidia";
      c.hosts[1].accelerator = "amd";
    },
    issues: [
      [
        "hosts[1].accelerator",
        '"amd" differs from "nvidia" on host a; engine replicas need the same accelerator, so run engines on matching hosts',
      ],
    ],
  },
  {
    name: "a relative stateDir",
    edit: (c) => (c.hosts[0].stateDir = "narwhal-fleet"),
    issues: [["hosts[0].stateDir", 'found "narwhal-fleet"; expected an absolute path without ".." (e.g. "/home/narwhal/.narwhal-fleet")']],
  },
  {
    name: "retainOnDestroy given as a string",
    edit: (c) => (c.hosts[1].retainOnDestroy = "yes"),
    issues: [["hosts[1].retainOnDestroy", 'found "yes", which is a string; expected true or false']],
  },
  {
    name: "an unknown key in a host, with the closest known key",
    edit: (c) => (c.hosts[0].prot = 22),
    issues: [
      [
        "hosts[0].prot",
        'unknown key; did you mean "port"? allowed keys: alias, destination, port, user, auth, hostKey, jump, fabricInterface, fabricAddress, urlHost, stateDir, retainOnDestroy, accelerator',
      ],
    ],
  },
];

describe("config: invalid hosts", () => rejectsEach(CASES));

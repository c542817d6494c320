import { expect } from "chai";
import { busyPlannedPorts, Listener, parseListeners, PlannedPort } from "../../../lib/discovery/listeners";

/** `ss -ltnpH` from iproute2 6.1 on a GPU host (column padding as printed). */
const SS_MODERN = [
  'LISTEN 0      4096         0.0.0.0:8100       0.0.0.0:*    users:(("python3",pid=31337,fd=27))',
  'LISTEN 0      4096   127.0.0.53%lo:53         0.0.0.0:*    users:(("systemd-resolve",pid=601,fd=14))',
  'LISTEN 0      128          0.0.0.0:22         0.0.0.0:*    users:(("sshd",pid=1022,fd=3))',
  'LISTEN 0      100      198.18.0.12:5601       0.0.0.0:*    users:(("node",pid=4242,fd=18))',
  'LISTEN 0      4096            [::]:22            [::]:*    users:(("sshd",pid=1022,fd=4),("systemd",pid=1,fd=52))',
  'LISTEN 0      511                *:8301             *:*    users:(("nginx",pid=2001,fd=6),("nginx",pid=2002,fd=6),("nginx",pid=2001,fd=7))',
  'LISTEN 0      4096   [fe80::1%fab0]:6310          [::]:*    users:(("tmux: server",pid=777,fd=9))',
  "LISTEN 0      128          0.0.0.0:2024       0.0.0.0:*",
  'LISTEN 0      5      [::ffff:127.0.0.1]:9000     *:*    users:(("we\\"ird",pid=5,fd=1))',
].join("\n");

/** `ss -ltnp` from iproute2 3.x: a header, no brackets around IPv6. */
const SS_OLD = [
  "State      Recv-Q Send-Q        Local Address:Port          Peer Address:Port ",
  'LISTEN     0      128                       *:22                       *:*      users:(("sshd",1022,3))',
  'LISTEN     0      128                      :::22                      :::*      users:(("sshd",pid=1022,fd=4))',
].join("\n");

describe("discovery: listeners (ss -ltnpH)", () => {
  const table: Array<[string, string, Listener[]]> = [
    [
      "modern ss: IPv4, scoped, IPv6 [::], *, link-local with zone, no owner, several owners, escaped names",
      SS_MODERN,
      [
        { address: "0.0.0.0", port: 8100, owners: [{ name: "python3", pid: 31337 }] },
        { address: "127.0.0.53", port: 53, interface: "lo", owners: [{ name: "systemd-resolve", pid: 601 }] },
        { address: "0.0.0.0", port: 22, owners: [{ name: "sshd", pid: 1022 }] },
        { address: "198.18.0.12", port: 5601, owners: [{ name: "node", pid: 4242 }] },
        { address: "::", port: 22, owners: [{ name: "sshd", pid: 1022 }, { name: "systemd", pid: 1 }] },
        { address: "*", port: 8301, owners: [{ name: "nginx", pid: 2001 }, { name: "nginx", pid: 2002 }] },
        { address: "fe80::1", port: 6310, interface: "fab0", owners: [{ name: "tmux: server", pid: 777 }] },
        { address: "0.0.0.0", port: 2024, owners: [] },
        { address: "::ffff:127.0.0.1", port: 9000, owners: [{ name: 'we"ird', pid: 5 }] },
      ],
    ],
    [
      "old ss with a header, unbracketed IPv6 and owners without pid= labels",
      SS_OLD,
      [
        { address: "*", port: 22, owners: [{ name: "sshd", pid: 1022 }] },
        { address: "::", port: 22, owners: [{ name: "sshd", pid: 1022 }] },
      ],
    ],
    ["no listeners at all", "\n", []],
  ];
  for (const [name, text, want] of table) it(name, () => expect(parseListeners(text)).to.deep.equal(want));

  it("reads a line without the State column", () => {
    expect(parseListeners("0 128 10.0.0.1:80 0.0.0.0:*")).to.deep.equal([{ address: "10.0.0.1", port: 80, owners: [] }]);
  });

  it("refuses a line it cannot read, quoting it", () => {
    expect(() => parseListeners("Cannot open netlink socket: Protocol not supported")).to.throw(
      'unexpected ss line: "Cannot open netlink socket: Protocol not supported"',
    );
  });
});

describe("discovery: busy planned ports", () => {
  const listeners = parseListeners(SS_MODERN);
  const e2 = (kind: PlannedPort["kind"], port: number): PlannedPort => ({ engineId: "e2", kind, port });

  const table: Array<[string, PlannedPort[], string[]]> = [
    [
      "the NIXL side-channel port held by another engine",
      [e2("nixl", 5601)],
      ["engine e2: planned NIXL side-channel port 5601 on host sim2 is already in use by node (pid 4242); stop it or choose another port"],
    ],
    [
      "the HTTP port held on 0.0.0.0 (any address blocks, not only the fabric address)",
      [e2("engine", 8100)],
      ["engine e2: planned engine HTTP port 8100 on host sim2 is already in use by python3 (pid 31337); stop it or choose another port"],
    ],
    [
      "the attestation port held by every nginx worker",
      [e2("attestation", 8301)],
      ["engine e2: planned attestation port 8301 on host sim2 is already in use by nginx (pid 2001), nginx (pid 2002); stop it or choose another port"],
    ],
    [
      "a port in the transfer range",
      [{ engineId: "e1", kind: "transfer", range: [6300, 6500] }],
      ["engine e1: planned transfer port range 6300-6500 on host sim2 includes port 6310, already in use by tmux: server (pid 777); stop it or choose another range"],
    ],
    [
      "an owner ss could not see",
      [e2("engine", 2024)],
      ["engine e2: planned engine HTTP port 2024 on host sim2 is already in use by a process ss could not name (run `ss -ltnp` as root to see it); stop it or choose another port"],
    ],
    [
      "the same port on IPv4 and IPv6 is one conflict naming both owners",
      [e2("engine", 22)],
      ["engine e2: planned engine HTTP port 22 on host sim2 is already in use by sshd (pid 1022), systemd (pid 1); stop it or choose another port"],
    ],
    ["free ports", [e2("engine", 8102), e2("attestation", 8302), e2("nixl", 5602), { engineId: "e2", kind: "transfer", range: [7000, 7100] }], []],
  ];
  for (const [name, planned, messages] of table) {
    it(name, () => expect(busyPlannedPorts(listeners, planned, { host: "sim2" }).map((c) => c.message)).to.deep.equal(messages));
  }

  it("returns the port, kind, engine and owners for callers", () => {
    const [c] = busyPlannedPorts(listeners, [e2("nixl", 5601)], { host: "sim2" });
    expect(c).to.deep.include({ engineId: "e2", kind: "nixl", port: 5601, owners: [{ name: "node", pid: 4242 }] });
    expect(c.listeners).to.have.length(1);
  });

  it("ignores listeners owned only by the given pids (an engine re-checked after its own start)", () => {
    expect(busyPlannedPorts(listeners, [e2("engine", 8100), e2("nixl", 5601)], { host: "sim2", ignorePids: [31337] }).map((c) => c.port)).to.deep.equal([5601]);
    // A shared socket still conflicts through its other owner.
    expect(busyPlannedPorts(listeners, [e2("engine", 22)], { host: "sim2", ignorePids: [1022] }).map((c) => c.message)).to.deep.equal([
      "engine e2: planned engine HTTP port 22 on host sim2 is already in use by systemd (pid 1); stop it or choose another port",
    ]);
  });
});

import { expect } from "chai";
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { provider } from "../../dynamic-providers/fabric-edge/provider";
import { LOCK_FILE } from "../../lib/fabric/measurement-lock";
import type { FabricEdgeInputs, FabricEdgeOutputs } from "../../dynamic-providers/fabric-edge/schema";
import { provider as gate } from "../../dynamic-providers/fabric-gate/provider";
import type { FabricGateInputs, FabricGateOutputs } from "../../dynamic-providers/fabric-gate/check";
import { UNKNOWN } from "../../lib/unknown";
import { evidenceRoot } from "../../lib/evidence";
import { runInHost, simDown, simUp, spawnInHost } from "../../sim/hosts";
import type { SimHost } from "../../sim/hosts";
import { rejection } from "../support/rejection";
import { edgeBetween, edgeEnd, edgeLogin } from "./support/fabric-edge";

/**
 * The fabric edge provider's own methods, called as the engine calls them, against two simulated hosts
 * of this file's own (sim6 and sim7, the default NVIDIA layout; sim5 and below are left alone).
 */
const STACK = "provider-tests";
const PORT = 5291;
/** An address on the bridge where no host answers: a provider that refuses early never reaches it. */
const NOBODY = "198.18.0.250";

let hosts: Map<string, SimHost>;

function inputs(from: string, to: string, extra: Partial<FabricEdgeInputs> = {}): FabricEdgeInputs {
  return {
    ...edgeBetween(hosts.get(from)!, hosts.get(to)!, STACK),
    transport: "tcp",
    tool: { durationS: 1, streams: 1 },
    iperfPort: PORT,
    requiredGbps: 1,
    ...extra,
  };
}

async function create(i: FabricEdgeInputs): Promise<FabricEdgeOutputs> {
  return (await provider.create(i)).outs as FabricEdgeOutputs;
}

/** iperf3 anywhere near these hosts: a socket in either namespace, or a process bound to either address. */
async function iperf3Left(): Promise<string[]> {
  const found: string[] = [];
  for (const h of hosts.values()) {
    const sockets = (await runInHost(h.alias, "ss -Htanp")).stdout;
    found.push(...sockets.split("\n").filter((l) => l.includes('"iperf3"')).map((l) => `${h.alias}: ${l}`));
    // Hosts share the machine's process table: only processes bound to this host's address are its own.
    const procs = (await runInHost(h.alias, ["ps", "-eo", "pid=,args="])).stdout.split("\n");
    found.push(...procs.filter((l) => l.includes("iperf3") && l.includes(`-B ${h.address}`)).map((l) => `${h.alias}: ${l.trim()}`));
    const dirs = (await runInHost(h.alias, "ls -d /tmp/narwhal-fabric.* 2>/dev/null", { allowFail: true })).stdout.trim();
    if (dirs) found.push(`${h.alias}: ${dirs}`);
  }
  return found;
}

function readEvidence(relativePath: string): Record<string, any> {
  return JSON.parse(fs.readFileSync(path.join(evidenceRoot(process.cwd(), STACK), relativePath), "utf8"));
}

function gateInputs(edges: FabricEdgeOutputs[]): FabricGateInputs {
  return {
    stack: STACK,
    hosts: ["sim6", "sim7"],
    edges: edges.map((o) => ({
      id: o.edgeId,
      source: o.source.alias,
      destination: o.destination.alias,
      gbps: o.measurement.gbps,
      requiredGbps: o.requiredGbps,
      verdict: o.verdict,
      reason: o.verdictReason,
      retransmits: o.measurement.retransmits,
      evidence: o.evidence,
    })),
  };
}

describe("providers: fabric edges measured with iperf3 between simulated hosts", function () {
  this.timeout(180_000);
  let forward: FabricEdgeOutputs;
  let reverse: FabricEdgeOutputs;

  before(async () => {
    const fleet = await simUp({ hosts: 7, aliases: ["sim6", "sim7"] });
    hosts = new Map(fleet.hosts.map((h) => [h.alias, h]));
  });
  after(async () => {
    await simDown({ aliases: ["sim6", "sim7"] });
  });

  it("measures one directed edge: every sample, the figure, both sides' fingerprints and route files, and no iperf3 left", async () => {
    forward = await create(inputs("sim6", "sim7", { tool: { durationS: 2, streams: 1 } }));
    expect(forward.measurement.samplesGbps).to.have.length(2);
    expect(forward.measurement.gbps).to.be.greaterThan(1);
    for (const s of forward.measurement.samplesGbps) expect(s).to.be.greaterThan(0);
    expect(forward.verdict).to.equal("met");
    expect(forward.fingerprint.forward).to.deep.include({
      transport: "tcp",
      source: { host: "sim6", interface: "fab0", address: "198.18.0.16" },
      destination: { host: "sim7", address: "198.18.0.17" },
      mtu: 1500,
    });
    expect(forward.fingerprint.forward.route).to.include({ destination: "198.18.0.17", device: "fab0", from: "198.18.0.16", gateway: null, mtu: null });
    expect(forward.fingerprint.return.route).to.include({ destination: "198.18.0.16", device: "fab0", from: "198.18.0.17" });
    expect(forward.observed).to.deep.equal(forward.measured);
    expect(await iperf3Left()).to.deep.equal([]);

    const record = readEvidence(forward.evidence.relativePath);
    expect(record).to.include({ kind: "fabric-edge" });
    expect(record.subject).to.deep.equal({ kind: "edge", alias: "sim6->sim7" });
    expect(record.verdict).to.deep.equal({ status: "pass", reasons: [] });
    expect(Object.keys(record.inputs).sort()).to.deep.equal(
      ["budget", "destination", "destinationLogin", "edgeId", "fingerprint", "iperfPort", "rdma", "requiredGbps", "source", "sourceLogin", "tool", "transport"],
    );
    expect(record.inputs.fingerprint).to.deep.equal(forward.measured);
    expect(record.observations.intervals.map((x: { gbps: number }) => x.gbps)).to.deep.equal(forward.measurement.samplesGbps);
    expect(record.observations.client.end.sum_received.bits_per_second / 1e9).to.equal(forward.measurement.gbps);
    expect(record.observations.routeFiles.sim6.routes4).to.include("198.18.0.0/24 dev fab0");
    expect(record.observations.routeFiles.sim7.rules4).to.include("lookup main");
    expect(record.observations.serverLog).to.include("Server listening on 5291");
    // Observe both sides, preflight both, server start, client, server stop.
    expect(record.commands.map((c: { host: string }) => c.host).sort()).to.deep.equal(["sim6", "sim6", "sim6", "sim7", "sim7", "sim7", "sim7"]);
    expect(record.commands.find((c: { argv?: string[] }) => c.argv)?.argv).to.include.members(["iperf3", "-c", "198.18.0.17", "-B", "198.18.0.16", "-J"]);
    expect(JSON.stringify(record)).to.not.include("PRIVATE KEY");
  });

  it("measures the mesh one edge at a time: a second measurement started at once waits for the first", async () => {
    const [a, b] = await Promise.all([create(inputs("sim7", "sim6")), create(inputs("sim6", "sim7"))]);
    reverse = a;
    const runs = [a, b].map((o) => ({ start: Date.parse(o.measurement.startedAt), end: Date.parse(o.measurement.endedAt) })).sort((x, y) => x.start - y.start);
    expect(runs[0].end).to.be.at.most(runs[1].start);
    expect(await iperf3Left()).to.deep.equal([]);
  });

  it("refuses, after a bounded wait, while another process holds the measurement lock, and takes over a dead holder's lock", async () => {
    const file = path.join(process.cwd(), LOCK_FILE);
    const holder: ChildProcess = spawn("sleep", ["60"], { stdio: "ignore" });
    try {
      fs.writeFileSync(file, JSON.stringify({ pid: holder.pid, token: "other", edge: "sim1->sim2", stack: "other-stack", since: "2026-01-01T00:00:00.000Z" }), { flag: "wx" });
      const t0 = Date.now();
      const e = await rejection(provider.create(inputs("sim6", "sim7", { lockWaitS: 1 })));
      expect(Date.now() - t0).to.be.within(900, 10_000);
      expect(e.code).to.equal("NARWHAL_FABRIC_BUSY");
      expect(e.message).to.equal(
        `edge sim6->sim7: another fabric measurement is running: edge sim1->sim2 of stack other-stack (pid ${holder.pid}, since 2026-01-01T00:00:00.000Z) ` +
          `holds ${LOCK_FILE}; waited lockWaitS=1s. The mesh is measured one edge at a time: let that measurement finish first.`,
      );
    } finally {
      holder.kill("SIGKILL");
      await new Promise((r) => holder.once("exit", r));
    }
    const after = await create(inputs("sim6", "sim7"));
    expect(after.verdict).to.equal("met");
    expect(fs.existsSync(file)).to.equal(false);
  });

  it("refuses when the port is taken or iperf3 already runs on a host, before starting anything", async () => {
    const d = hosts.get("sim7")!;
    const listener = spawnInHost("sim7", ["python3", "-c", `import socket,time; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("${d.address}", ${PORT})); s.listen(); time.sleep(60)`]);
    try {
      await runInHost("sim7", `for i in $(seq 50); do ss -Hltn 'sport = :${PORT}' | grep -q . && exit 0; sleep 0.1; done; exit 1`);
      const e = await rejection(provider.create(inputs("sim6", "sim7")));
      expect(e.code).to.equal("NARWHAL_FABRIC_BUSY");
      expect(e.message).to.match(new RegExp(`^edge sim6->sim7: host sim7: port ${PORT} is taken:\\n.*python3.*; choose another fabric.iperfPort or stop that listener$`, "s"));
    } finally {
      listener.kill("SIGKILL");
    }
    const other = spawnInHost("sim6", ["iperf3", "-s", "-B", hosts.get("sim6")!.address, "-p", "5299", "-1"]);
    try {
      await runInHost("sim6", "for i in $(seq 50); do ss -Hltn 'sport = :5299' | grep -q . && exit 0; sleep 0.1; done; exit 1");
      const e = await rejection(provider.create(inputs("sim6", "sim7")));
      expect(e.code).to.equal("NARWHAL_FABRIC_BUSY");
      expect(e.message).to.include("edge sim6->sim7: host sim6: iperf3 is already running here:").and.include("measured one edge at a time while idle");
    } finally {
      other.kill("SIGKILL");
    }
  });

  it("names an iperf3 the host has but cannot execute by its path and mode, not as not installed, before starting anything", async () => {
    // The host's own mount namespace (private propagation): only sim6 sees the modeless copy.
    await runInHost("sim6", "cp /usr/bin/iperf3 /tmp/iperf3-modeless && chmod 644 /tmp/iperf3-modeless && mount --bind /tmp/iperf3-modeless /usr/bin/iperf3");
    try {
      const e = await rejection(provider.create(inputs("sim6", "sim7")));
      expect(e.code).to.equal("NARWHAL_FABRIC_TOOL_MISSING");
      expect(e.message).to.match(
        /^edge sim6->sim7: host sim6: iperf3 is at \/usr\/bin\/iperf3 but this login \(root\) cannot execute it: -rw-r--r-- .* \/usr\/bin\/iperf3; it is installed but not executable: make it executable for this login \(`chmod 755 '\/usr\/bin\/iperf3'`; on a noexec mount, install it elsewhere\) or reinstall iperf3$/,
      );
      expect(e.message).to.not.include("not installed");
    } finally {
      await runInHost("sim6", "umount /usr/bin/iperf3; rm -f /tmp/iperf3-modeless");
    }
    expect(await iperf3Left()).to.deep.equal([]);
  });

  it("records a throttled link below its budget, fails the gate with the runbook's diagnosis, and re-judges a new budget without measuring", async () => {
    await runInHost("sim6", "tc qdisc add dev fab0 root tbf rate 500mbit burst 64kb latency 50ms");
    let slow: FabricEdgeOutputs;
    try {
      slow = await create(inputs("sim6", "sim7", { requiredGbps: 1 }));
    } finally {
      await runInHost("sim6", "tc qdisc del dev fab0 root");
    }
    expect(slow.measurement.gbps).to.be.within(0.3, 0.55);
    expect(slow.verdict).to.equal("below");
    expect(readEvidence(slow.evidence.relativePath).verdict.status).to.equal("fail");

    const e = await rejection(gate.create(gateInputs([slow, reverse])));
    expect(e.code).to.equal("NARWHAL_FABRIC_GATE");
    const figure = Number(slow.measurement.gbps.toPrecision(4));
    expect(e.message).to.equal(
      "Gate D: 1 of 2 fabric edge(s) do not meet their budget:\n" +
        `  - edge sim6->sim7: measured ${figure} Gbit/s, ${slow.measurement.retransmits} retransmits, below its budget of 1 Gbit/s\n` +
        "Diagnose route, binding, listener, firewall, HCA/GID, MTU, retransmissions or RDMA counters, CPU saturation, concurrent traffic. " +
        "Re-sample only after the root cause is identified (`pulumi up --replace <edge URN>`), or change the budget inputs in the stack's fabric section, which re-evaluates without re-measuring.",
    );

    // A lower budget is an update: the stored figure is judged again, with no login (the hosts are not even reachable).
    const cheaper = { ...inputs("sim6", "sim7", { requiredGbps: 0.25 }), sourceLogin: { ...edgeLogin(hosts.get("sim6")!), host: NOBODY } };
    const d = await provider.diff!("id", slow, cheaper);
    expect(d).to.deep.equal({ changes: true, replaces: [], deleteBeforeReplace: false });
    const { outs } = (await provider.update!("id", slow, cheaper)) as { outs: FabricEdgeOutputs };
    expect(outs.verdict).to.equal("met");
    expect(outs.measurement).to.deep.equal(slow.measurement);
    expect(outs.evidence).to.deep.equal(slow.evidence);
    const passed = (await gate.create(gateInputs([outs, reverse]))).outs as FabricGateOutputs;
    expect(passed.matrix.cells.sim6.sim7).to.deep.equal({ gbps: slow.measurement.gbps, requiredGbps: 0.25, verdict: "met" });
    expect(passed.matrix.cells.sim6.sim6).to.equal(null);
    expect(readEvidence(passed.evidence.relativePath)).to.deep.include({ kind: "fabric-matrix", verdict: { status: "pass", reasons: [] } });
  });

  it("sees a changed route on refresh as a moved path of exactly the edges that use it, and nothing once it is back", async () => {
    const route = "198.18.0.17/32 dev fab0 src 198.18.0.16 mtu 1400";
    await runInHost("sim6", `ip route add ${route}`);
    try {
      const f = (await provider.read!("id", forward)).props as FabricEdgeOutputs;
      const r = (await provider.read!("id", reverse)).props as FabricEdgeOutputs;
      expect(f.observed.forwardPath).to.not.equal(f.measured.forwardPath);
      expect(f.observed.returnPath).to.equal(f.measured.returnPath);
      expect(r.observed.returnPath).to.not.equal(r.measured.returnPath);
      expect(r.observed.forwardPath).to.equal(r.measured.forwardPath);
      expect(await provider.diff!("id", f, inputs("sim6", "sim7", { tool: forward.tool }))).to.deep.equal({ changes: true, replaces: ["forwardPath"], deleteBeforeReplace: false });
      expect(await provider.diff!("id", r, inputs("sim7", "sim6"))).to.deep.equal({ changes: true, replaces: ["returnPath"], deleteBeforeReplace: false });
    } finally {
      await runInHost("sim6", `ip route del ${route}`);
    }
    const back = (await provider.read!("id", forward)).props as FabricEdgeOutputs;
    expect(back.observed).to.deep.equal(back.measured);
    expect(await provider.diff!("id", back, inputs("sim6", "sim7", { tool: forward.tool }))).to.deep.equal({ changes: false, replaces: [], deleteBeforeReplace: false });
  });

  it("replaces an edge when what it was measured against changes, and not for a login or port change", async () => {
    const base = inputs("sim6", "sim7", { tool: forward.tool });
    const diff = (news: FabricEdgeInputs) => provider.diff!("id", forward, news);
    expect((await diff({ ...base, destination: { ...base.destination, fabricAddress: "198.18.0.27" } })).replaces).to.deep.equal(["destination"]);
    expect((await diff({ ...base, tool: { durationS: 5, streams: 1 } })).replaces).to.deep.equal(["tool"]);
    expect((await diff({ ...base, iperfPort: 5300, sourceLogin: { ...base.sourceLogin, connectTimeoutS: 5 } })).replaces).to.deep.equal([]);
  });

  it("does not announce a change for what a preview cannot know yet: a re-taken discovery's facts, or a budget being re-captured", async () => {
    const base = inputs("sim6", "sim7", { tool: forward.tool });
    const unknown = {
      ...base,
      source: { ...base.source, hostKey: UNKNOWN, fabricAddress: UNKNOWN },
      requiredGbps: UNKNOWN as unknown as number,
      budget: UNKNOWN as unknown as FabricEdgeInputs["budget"],
    };
    expect(await provider.diff!("id", forward, unknown)).to.deep.equal({ changes: false, replaces: [], deleteBeforeReplace: false });
    // What the config says of the same end is known, and still replaces: another machine, or another address chosen.
    expect((await provider.diff!("id", forward, { ...unknown, source: { ...unknown.source, sshHost: "198.18.0.26" } })).replaces).to.deep.equal(["source"]);
    expect((await provider.diff!("id", forward, { ...unknown, source: { ...unknown.source, fabricAddressChoice: "198.18.0.26" } })).replaces).to.deep.equal(["source"]);
    // Choosing the address already measured is no change.
    expect((await provider.diff!("id", forward, { ...unknown, source: { ...unknown.source, fabricAddressChoice: "198.18.0.16" } })).changes).to.equal(false);
  });

  it("refuses an RDMA edge on hosts without an HCA, naming each host, HCA and port, and bad input before touching a host", async () => {
    const rdmaEdge = { transport: "ucx_rdma" as const, tool: { size: 65536, iterations: 5000 }, rdma: { source: { hca: "mlx5_0", port: 1, gidIndex: 3 }, destination: { hca: "mlx5_1", port: 1, gidIndex: 3 } } };
    const rdma = await rejection(provider.create(inputs("sim6", "sim7", rdmaEdge)));
    expect(rdma.code).to.equal("NARWHAL_FABRIC_RDMA");
    expect(rdma.message).to.equal(
      "edge sim6->sim7: host sim6: HCA mlx5_0 port 1: the host has no /sys/class/infiniband (no RDMA driver loaded, or no HCA); " +
        "host sim7: HCA mlx5_1 port 1: the host has no /sys/class/infiniband (no RDMA driver loaded, or no HCA). Diagnose HCA/GID; nothing was measured",
    );
    const away = { sourceLogin: { ...edgeLogin(hosts.get("sim6")!), host: NOBODY }, destinationLogin: { ...edgeLogin(hosts.get("sim7")!), host: NOBODY } };
    const tool = await rejection(provider.create(inputs("sim6", "sim7", { ...away, ...rdmaEdge, tool: { durationS: 2, streams: 1 } })));
    expect(tool.message).to.equal('edge sim6->sim7: tool needs size (bytes, 1 or more) and iterations (5 or more) for ucx_rdma, got {"durationS":2,"streams":1}; nothing was run');
    const bad = await rejection(provider.create(inputs("sim6", "sim7", { ...away, destination: { ...edgeEnd(hosts.get("sim7")!), fabricAddress: "sim7.fabric" } })));
    expect(bad.message).to.match(/^edge sim6->sim7: destination fabricAddress "sim7\.fabric": .*; nothing was run$/);
  });
});

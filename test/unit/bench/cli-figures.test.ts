import { expect } from "chai";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type { EngineEvent } from "@pulumi/pulumi/automation";
import { compileFloor, FLOOR_COMPILED_DIR } from "../../../bench/scale/floor-compiled";
import { edgeTimes, gateOfUrn, gateTimes } from "../../../bench/scale/gate-times";
import { roleOf, watchProcessTree } from "../../../bench/scale/process-tree";
import { cpuWhere } from "../../../bench/scale/cpu-profile";

const urn = (chain: string, name: string) => `urn:pulumi:bench::narwhal-fleet::narwhal:fleet:Fleet$${chain}::${name}`;

describe("bench:cli figures", () => {
  it("puts each resource in the gate of its nearest named type or component", () => {
    expect(gateOfUrn(urn("narwhal:engine:Engine$command:remote:Command", "fleet-e1-process"))).to.equal("C");
    expect(gateOfUrn(urn("narwhal:fabric:FabricMesh$pulumi-nodejs:dynamic/narwhal:FabricEdge", "fleet-edge"))).to.equal("D");
    // Its own type decides before the component around it.
    expect(gateOfUrn(urn("narwhal:engine:Engine$pulumi-nodejs:dynamic/narwhal:Attestation", "fleet-e1-attestation"))).to.equal("E");
    expect(gateOfUrn(urn("narwhal:router:RouterHost$narwhal:observability:Monitoring$command:remote:Command", "fleet-prometheus"))).to.equal("G");
    expect(gateOfUrn("urn:pulumi:bench::narwhal-fleet::pulumi:providers:command::default")).to.equal("other");
  });

  it("times a gate from its first step to its last, and adds its steps", async () => {
    const t = gateTimes();
    const event = (kind: "resourcePreEvent" | "resOutputsEvent", op: string, u: string) => ({ sequence: 0, timestamp: 0, [kind]: { metadata: { op, urn: u, type: u.split("::")[2].split("$").pop(), provider: "" } } }) as unknown as EngineEvent;
    const component = urn("narwhal:profiles:ProfileMesh", "fleet-profiles");
    t.onEvent(event("resourcePreEvent", "create", component));
    const a = urn("pulumi-nodejs:dynamic/narwhal:Profile", "p1");
    const b = urn("pulumi-nodejs:dynamic/narwhal:Profile", "p2");
    t.onEvent(event("resourcePreEvent", "create", a));
    t.onEvent(event("resourcePreEvent", "create", b));
    t.onEvent(event("resourcePreEvent", "same", urn("pulumi-nodejs:dynamic/narwhal:Preflight", "pf")));
    await new Promise((r) => setTimeout(r, 30));
    t.onEvent(event("resOutputsEvent", "create", a));
    t.onEvent(event("resOutputsEvent", "create", b));
    t.onEvent(event("resOutputsEvent", "same", urn("pulumi-nodejs:dynamic/narwhal:Preflight", "pf")));
    t.onEvent(event("resOutputsEvent", "create", component));
    const f = t.times().F;
    expect(f.resources, "neither a same step nor a component is timed").to.equal(2);
    expect(f.stepsS).to.be.at.least(f.spanS);
  });

  it("gives each fabric edge's step against the measurement it runs: median, longest, and the median's overhead", () => {
    expect(edgeTimes([2.6, 2.3, 2.4, 9.1], 2)).to.deep.equal({ edges: 4, measureS: 2, medianStepS: 2.5, maxStepS: 9.1, medianOverheadS: 0.5 });
    expect(edgeTimes([2.4, 2.3, 2.6], 2)).to.deep.include({ medianStepS: 2.4, medianOverheadS: 0.4 });
    expect(edgeTimes([], 2)).to.deep.include({ edges: 0, medianStepS: 0 });
  });

  it("tells the program and the provider hosts apart by their command lines", () => {
    expect(roleOf("node /x/node_modules/@pulumi/pulumi/cmd/dynamic-provider/index.js 127.0.0.1:1")).to.equal("providerHost");
    expect(roleOf("node /x/node_modules/@pulumi/pulumi/cmd/run /x/program.js")).to.equal("program");
    expect(roleOf("pulumi preview")).to.equal("other");
  });

  it("reads the peak memory and the CPU of a process tree", () => {
    const spent = process.cpuUsage();
    const { peakRssMiB, cpuS } = watchProcessTree(process.pid).stop();
    expect(peakRssMiB.other, "this mocha process").to.be.above(10);
    // /proc counts user and system time each in whole 10 ms ticks, and the sampler reads it after this
    // process's own count: at least each part of that count, rounded down to its tick.
    const ticks = Math.floor(spent.user / 1e4) + Math.floor(spent.system / 1e4);
    expect(Math.round(cpuS.other * 100)).to.be.at.least(ticks);
  });

  it("says where a profiled process's CPU went: by owner and by function, idle left out", () => {
    const frame = (functionName: string, url: string, lineNumber = 0) => ({ functionName, url, lineNumber });
    const nodes = [
      { id: 1, callFrame: frame("(root)", "") },
      { id: 2, callFrame: frame("(idle)", "") },
      { id: 3, callFrame: frame("serialize", "file:///p/node_modules/@pulumi/pulumi/runtime/rpc.js", 9) },
      { id: 4, callFrame: frame("planOf", "file:///p/lib/launch/plan.ts", 41) },
      { id: 5, callFrame: frame("(garbage collector)", "") },
    ];
    // A delta is the time from one sample to the next, so it is the earlier sample's: 3 gets 1 s + 3 s,
    // 4 gets 2 s, idle 5 s, the collector 1 s, and the last sample nothing.
    const profile = { nodes, samples: [3, 3, 4, 2, 5, 1], timeDeltas: [0, 1e6, 3e6, 2e6, 5e6, 1e6] };
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "cpu-where-")), "program-1.cpuprofile");
    fs.writeFileSync(file, JSON.stringify(profile));
    const where = cpuWhere(file, "/p", 2);
    expect(where.busyS).to.equal(7);
    expect(where.byOwner).to.deep.equal([
      { owner: "@pulumi/pulumi", s: 4 },
      { owner: "lib/", s: 2 },
      { owner: "(garbage collector)", s: 1 },
      { owner: "(root)", s: 0 },
    ]);
    expect(where.topFunctions).to.deep.equal([
      { fn: "serialize node_modules/@pulumi/pulumi/runtime/rpc.js:10", s: 4 },
      { fn: "planOf lib/launch/plan.ts:42", s: 2 },
    ]);
  });

  it("compiles the floor into a project Pulumi runs as JavaScript", () => {
    const dir = compileFloor();
    expect(dir).to.equal(FLOOR_COMPILED_DIR);
    const project = fs.readFileSync(path.join(dir, "Pulumi.yaml"), "utf8");
    expect(project).to.match(/^main: index\.js$/m).and.match(/typescript: false/).and.match(/^name: narwhal-scale-floor$/m);
    expect(fs.readFileSync(path.join(dir, "index.js"), "utf8")).to.include('requireNumber("resources")').and.not.include("interface Props");
  });
});

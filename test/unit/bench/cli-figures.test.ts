import { expect } from "chai";
import * as fs from "node:fs";
import * as path from "node:path";
import type { EngineEvent } from "@pulumi/pulumi/automation";
import { compileFloor, FLOOR_COMPILED_DIR } from "../../../bench/scale/floor-compiled";
import { gateOfUrn, gateTimes } from "../../../bench/scale/gate-times";
import { roleOf, watchPeakRss } from "../../../bench/scale/peak-rss";

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

  it("tells the program and the provider hosts apart by their command lines", () => {
    expect(roleOf("node /x/node_modules/@pulumi/pulumi/cmd/dynamic-provider/index.js 127.0.0.1:1")).to.equal("providerHost");
    expect(roleOf("node /x/node_modules/@pulumi/pulumi/cmd/run /x/program.js")).to.equal("program");
    expect(roleOf("pulumi preview")).to.equal("other");
  });

  it("reads the peak memory of a process tree", () => {
    const peak = watchPeakRss(process.pid).stop();
    expect(peak.other, "this mocha process").to.be.above(10);
  });

  it("compiles the floor into a project Pulumi runs as JavaScript", () => {
    const dir = compileFloor();
    expect(dir).to.equal(FLOOR_COMPILED_DIR);
    const project = fs.readFileSync(path.join(dir, "Pulumi.yaml"), "utf8");
    expect(project).to.match(/^main: index\.js$/m).and.match(/typescript: false/).and.match(/^name: narwhal-scale-floor$/m);
    expect(fs.readFileSync(path.join(dir, "index.js"), "utf8")).to.include('requireNumber("resources")').and.not.include("interface Props");
  });
});

/**
 * A rollout continues from what the stack's last successful `up` recorded, read back through the real
 * CLI's `readStackOutputs` (entry/recorded-outputs.ts). A small program stands in for the fleet: the real
 * config parser and rollout decision, and one resource per engine holding the settings its plan would
 * launch (components/discovery.ts `planFor` takes them the same way), plus a gate on the wave's engine
 * that fails on demand, the way a wave's proof fails its `up`.
 */
import { expect } from "chai";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { LocalWorkspace, PulumiCommand, type EngineEvent, type Stack } from "@pulumi/pulumi/automation";
import { localCliEnv, TOOLS } from "../support/local-cli";

const ROOT = path.resolve(__dirname, "..", "..");

const PROGRAM = (root: string) => `
require(${JSON.stringify(path.join(root, "tools", "ts-require.js"))});
// As program.js does: the program's refusals end the run as their message alone.
require(${JSON.stringify(path.join(root, "tools", "domain-errors.js"))});
const pulumi = require("@pulumi/pulumi");
const { parseFleetConfig } = require(${JSON.stringify(path.join(root, "lib", "config", "parse.ts"))});
const { decideRollout, recordedDeployment } = require(${JSON.stringify(path.join(root, "lib", "rollout", "decide.ts"))});
const { recordedOutputs } = require(${JSON.stringify(path.join(root, "entry", "recorded-outputs.ts"))});
const { hostDiscoveryPlan } = require(${JSON.stringify(path.join(root, "lib", "fleet", "host-plan.ts"))});

const config = new pulumi.Config();
const spec = parseFleetConfig({
  hosts: [{ alias: "a", destination: "root@198.18.0.11", fabricInterface: "fab0" }, { alias: "b", destination: "root@198.18.0.12", fabricInterface: "fab0" }],
  // \`pair\`: one engine of each role.
  engines: config.getBoolean("pair")
    ? [{ id: "p1", host: "a", role: "prefill" }, { id: "d1", host: "b", role: "decode" }]
    : [
        { id: "p1", host: "a", role: "prefill", gpuIds: [0] },
        { id: "p2", host: "b", role: "prefill", gpuIds: [0] },
        { id: "d1", host: "a", role: "decode", gpuIds: [1] },
        { id: "d2", host: "b", role: "decode", gpuIds: [1] },
      ],
  model: { servedName: "m", checkpointDir: "/models/m" },
  launch: { maxNumSeqs: config.requireNumber("maxNumSeqs") },
  rollout: config.getObject("rollout") ?? {},
});
const provider = {
  async create(inputs) {
    if (inputs.fail) throw new Error("gate failed on " + inputs.engine);
    return { id: inputs.engine, outs: inputs };
  },
  async diff(_id, olds, news) {
    const changed = JSON.stringify(olds) !== JSON.stringify(news);
    return { changes: changed, replaces: changed ? ["settings"] : [] };
  },
};
const digests = Object.fromEntries(spec.hosts.map((h) => [h.alias, hostDiscoveryPlan(spec, h).policyDigest]));
const decision = pulumi.output(recordedOutputs().then(recordedDeployment)).apply((recorded) => decideRollout(spec, recorded, digests));
decision.apply((d) => d.message && pulumi.log.info(d.message));
// Each host's discovery, whose replace key is the launch policy of its engines (components/discovery.ts).
for (const h of spec.hosts) new pulumi.dynamic.Resource(provider, "discovery-" + h.alias, { engine: h.alias, settings: decision.apply((d) => d.record.hosts[h.alias].policyDigest), fail: false });
const gates = spec.engines.map((e) => {
  const settings = decision.apply((d) => d.record.engines[e.id].settings);
  const engine = new pulumi.dynamic.Resource(provider, "engine-" + e.id, { engine: e.id, settings, fail: false });
  // The wave's proof: fails on demand, after its engine restarted on the new settings.
  return new pulumi.dynamic.Resource(provider, "gate-" + e.id, { engine: e.id, settings, fail: decision.apply((d) => d.record.wave.includes(e.id) && config.getBoolean("failWave") === true) }, { dependsOn: [engine] });
});
// As the fleet records it (components/fleet.ts): once the last gate has passed.
exports.rollout = pulumi.all([decision, ...gates.map((g) => g.id)]).apply(([d]) => d.record);
`;

interface Rollout {
  status: string;
  wave: string[];
  pending: string[];
  engines: Record<string, { settings: { maxNumSeqs: number }; onTarget: boolean }>;
}

describe("providers: a rollout continues from the stack's last successful up (real CLI)", function () {
  this.timeout(300_000);
  let tmp = "";
  let stack: Stack;
  let openStack: (name: string) => Promise<Stack>;

  before(async function () {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), "narwhal-rollout-"));
    const project = path.join(tmp, "project");
    fs.mkdirSync(project);
    fs.mkdirSync(path.join(tmp, "state"));
    fs.writeFileSync(path.join(project, "Pulumi.yaml"), "name: rollout-record\nruntime: nodejs\n");
    fs.writeFileSync(path.join(project, "package.json"), JSON.stringify({ name: "rollout-record", main: "index.js" }));
    fs.writeFileSync(path.join(project, "index.js"), PROGRAM(ROOT));
    fs.symlinkSync(path.join(ROOT, "node_modules"), path.join(project, "node_modules"));
    const cli = await PulumiCommand.get({ root: TOOLS, skipVersionCheck: true });
    openStack = (name) => LocalWorkspace.createOrSelectStack(
      { stackName: name, workDir: project },
      {
        pulumiCommand: cli,
        pulumiHome: path.join(TOOLS, "pulumi-home"),
        envVars: localCliEnv(path.join(tmp, "state")),
      },
    );
    stack = await openStack("rollout");
  });

  after(() => {
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  const setSeqs = (n: number) => stack.setConfig("maxNumSeqs", { value: String(n) });
  const rollout = async () => (await stack.outputs()).rollout.value as Rollout;
  const seqs = (r: Rollout) => Object.fromEntries(Object.entries(r.engines).map(([id, e]) => [id, e.settings.maxNumSeqs]));

  /** A real preview: the engines and the hosts' discoveries it would replace, and the program's rollout line. */
  async function preview(): Promise<{ replaced: string[]; rediscovered: string[]; line: string }> {
    const replaced: string[] = [];
    const rediscovered: string[] = [];
    const lines: string[] = [];
    await stack.preview({
      onOutput: () => undefined,
      onEvent: (e: EngineEvent) => {
        const m = e.resourcePreEvent?.metadata;
        if (m?.op === "replace" && /::engine-/.test(m.urn)) replaced.push(m.urn.split("::engine-").pop()!);
        if (m?.op === "replace" && /::discovery-/.test(m.urn)) rediscovered.push(m.urn.split("::discovery-").pop()!);
        if (e.diagnosticEvent?.message.includes("rollout:")) lines.push(e.diagnosticEvent.message.trim());
      },
    });
    return { replaced: replaced.sort(), rediscovered: rediscovered.sort(), line: lines.join("\n") };
  }

  it("rolls one engine per up, takes the same wave again after a failed one, and settles", async () => {
    await setSeqs(64);
    await stack.up({ onOutput: () => undefined });
    expect(await rollout()).to.deep.include({ status: "settled", wave: [], pending: [] });

    await setSeqs(128);
    const first = await preview();
    expect(first.replaced).to.deep.equal(["p1"]);
    // Both hosts keep an engine on 64: neither is discovered again yet.
    expect(first.rediscovered).to.deep.equal([]);
    expect(first.line).to.include("rollout: rolling change (maxNumSeqs 64 → 128) over 4 engines").and.include("this up restarts p1");

    // The wave's gate fails: the up fails, and the stack still records every engine on 64.
    await stack.setConfig("failWave", { value: "true" });
    const failure = await stack.up({ onOutput: () => undefined }).then(() => "", (err: Error) => err.message);
    expect(failure).to.include("gate failed on p1");
    expect(seqs(await rollout())).to.deep.equal({ p1: 64, p2: 64, d1: 64, d2: 64 });
    // So the next up takes p1 again (its engine already runs 128: only its gate is left), not p2.
    const again = await preview();
    expect(again.replaced).to.deep.equal([]);
    expect(again.line).to.include("this up restarts p1");

    await stack.setConfig("failWave", { value: "false" });
    await stack.up({ onOutput: () => undefined });
    const second = await rollout();
    expect(second).to.deep.include({ status: "rolling", wave: ["p1"], pending: ["p2", "d1", "d2"] });
    expect(seqs(second)).to.deep.equal({ p1: 128, p2: 64, d1: 64, d2: 64 });
    // Each wave's preview: its engine, and the host whose last engine it is discovered again with it.
    const waves = [
      { wave: "p2", rediscovered: [] },
      { wave: "d1", rediscovered: ["a"] },
      { wave: "d2", rediscovered: ["b"] },
    ];
    for (const { wave, rediscovered } of waves) {
      expect(await preview(), wave).to.deep.include({ replaced: [wave], rediscovered });
      await stack.up({ onOutput: () => undefined });
      expect((await rollout()).engines[wave].onTarget, wave).to.equal(true);
    }
    expect(await rollout()).to.deep.include({ status: "settled", wave: [], pending: [] });
    expect(seqs(await rollout())).to.deep.equal({ p1: 128, p2: 128, d1: 128, d2: 128 });
    expect((await preview()).replaced).to.deep.equal([]);
  });

  it("stops before an engine alone in its role with one clean message, and restarts it once the operator allows the outage", async () => {
    const pair = await openStack("pair");
    await pair.setConfig("pair", { value: "true" });
    await pair.setConfig("maxNumSeqs", { value: "64" });
    await pair.up({ onOutput: () => undefined });
    await pair.setConfig("maxNumSeqs", { value: "128" });
    const refused = await pair.preview({ onOutput: () => undefined }).then(() => "", (err: Error) => err.message);
    expect(refused).to.include(`rollout: stopped before p1, d1: p1 is the only prefill engine, d1 is the only decode engine, so restarting them leaves that role with no engine to serve until readmitted. Add another prefill or decode engine (engines[].role), or set narwhal-fleet:rollout '{"allowRoleOutage": true}' to restart them anyway. Nothing was touched.`);
    expect(refused, "no JavaScript frames").to.not.match(/\n\s+at /);
    await pair.setConfig("rollout", { value: JSON.stringify({ allowRoleOutage: true }) });
    await pair.up({ onOutput: () => undefined });
    expect((await pair.outputs()).rollout.value).to.deep.include({ status: "rolling", wave: ["p1"], pending: ["d1"] });
  });
});

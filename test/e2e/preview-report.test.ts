import { expect } from "chai";
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import { promisify } from "node:util";
import { API_KEY, PROJECT_ROOT, sharedFleet } from "./support/stack";
import { awaitHealthy, restartByHand, restartWaveByHand } from "./support/restart";
import { expectNarwhalCheckAgrees } from "./support/narwhal-check";
import { invalidationSummary } from "../../lib/report/preview";
import type { InvalidatedEvidence, InvalidationSummary } from "../../lib/report";

interface EngineOut { host: string; url: string }

const run = promisify(execFile);

/** The command as an operator types it, in the project's environment (the npm script sources scripts/env.sh). */
async function cli(...args: string[]): Promise<string> {
  const { stdout } = await run("npm", ["run", "--silent", "invalidated", "--", "--stack", "e2e", ...args], { cwd: PROJECT_ROOT, env: process.env, maxBuffer: 16 * 1024 * 1024, timeout: 240_000 });
  return stdout;
}

const replaced = (s: InvalidationSummary): InvalidatedEvidence[] => s.gates.flatMap((g) => g.replaced);
const updated = (s: InvalidationSummary): InvalidatedEvidence[] => s.gates.flatMap((g) => g.updated);
/** name → gate, kind and reasons: what the report says about each piece of evidence it names. */
const said = (xs: InvalidatedEvidence[]) => Object.fromEntries(xs.map((e) => [e.name, { gate: e.gate, kind: e.kind, subject: e.subject, keys: e.keys }]));

/** Neither the engine API key nor any line of the SSH private key may reach the report. */
function expectNoSecret(out: string, privateKeyPath: string): void {
  expect(out).to.not.contain(API_KEY);
  const keyLines = fs.readFileSync(privateKeyPath, "utf8").split("\n").filter((l) => l.length > 20 && !l.startsWith("-----"));
  for (const l of keyLines) expect(out).to.not.contain(l);
  expect(out).to.not.contain("PRIVATE KEY");
}

describe("e2e: the preview report (npm run invalidated)", function () {
  this.timeout(1_200_000);

  it("names exactly a restarted engine's invalidated evidence, by gate and reason, through the function and the CLI, then nothing once converged", async () => {
    const { stack, hosts } = await sharedFleet();
    expect((await invalidationSummary(stack, { refresh: true })).nothingInvalidated).to.equal(true);

    const e2 = ((await stack.outputs()).engines!.value as Record<string, EngineOut>).e2!;
    await restartByHand("e2e", "e2", e2.host);
    await awaitHealthy(e2.url);

    const expected = {
      "fleet-e2-generation": { gate: "C", kind: "generation", subject: "e2 on sim2", keys: ["generation"] },
      "fleet-e2-cache": { gate: "C", kind: "cache capture", subject: "e2 on sim2", keys: ["generationDigest"] },
      "fleet-attestation-e2-sidecar": { gate: "E", kind: "attestation sidecar", subject: "e2 on sim2", keys: ["triggers"] },
      "fleet-attestation-e2": { gate: "E", kind: "attestation", subject: "e2 on sim2", keys: ["attestation", "sidecar"] },
    };
    // What the fleet measured across e2 follows it; their reasons are inputs not known until e2 is measured again.
    const followers = {
      "fleet-profiles-e2": { gate: "F", kind: "profile", subject: "e2 on sim2" },
      "fleet-profiles-store": { gate: "F", kind: "profile store", subject: "fleet" },
      "fleet-preflight": { gate: "F", kind: "preflight", subject: "fleet" },
      "fleet-router-host-router-process": { gate: "G", kind: "router process", subject: "fleet" },
      "fleet-router-host-router-proof": { gate: "G", kind: "router proof", subject: "fleet" },
      "fleet-router-host-router-record": { gate: "G", kind: "router record", subject: "fleet" },
    };
    const sayWithoutFollowerKeys = (xs: InvalidatedEvidence[]) =>
      Object.fromEntries(Object.entries(said(xs)).map(([name, e]) => [name, name in followers ? { gate: e.gate, kind: e.kind, subject: e.subject } : e]));
    const s = await invalidationSummary(stack, { refresh: true });
    expect(sayWithoutFollowerKeys(replaced(s))).to.deep.equal({ ...expected, ...followers });
    for (const name of Object.keys(followers)) expect(said(replaced(s))[name]!.keys, name).to.not.be.empty;
    expect(updated(s)).to.deep.equal([]);
    const generation = replaced(s).find((e) => e.name === "fleet-e2-generation")!;
    // The refresh saw another process: the proved digest against the observed one.
    expect(generation.changes).to.have.length(1);
    expect(generation.changes[0]).to.deep.include({ input: "generation", old: ((await stack.outputs()).engines!.value as Record<string, { generationDigest: string }>).e2!.generationDigest, observed: "restarted" });
    expect(generation.changes[0]!.new).to.match(/^sha256:[0-9a-f]{64}$/).and.not.equal(generation.changes[0]!.old);
    expect(s.kept.map((k) => k.name)).to.include.members(["fleet-e2-process", "fleet-e2-image-check", "fleet-sim2", "fleet-e1-generation", "fleet-fabric-gate"]);

    const json = await cli("--json", "--refresh");
    expectNoSecret(json, hosts[0]!.privateKeyPath);
    const fromCli = JSON.parse(json) as InvalidationSummary;
    expect(said(replaced(fromCli))).to.deep.equal(said(replaced(s)));
    expect(fromCli.kept.map((k) => k.name)).to.deep.equal(s.kept.map((k) => k.name));
    const text = await cli("--refresh");
    expectNoSecret(text, hosts[0]!.privateKeyPath);
    expect(text).to.contain("Gate C: engines").and.contain("Gate E: attestation").and.contain("Gate F: profiles").and.contain("fleet-e2-generation");

    // The runbook's rule before the next up (vLLM #38840): e2's peers restart too, before any KV reaches e2.
    await restartWaveByHand("e2e", ["e1", "e3", "e4"], (await stack.outputs()).engines!.value as Record<string, EngineOut>);
    await stack.up({ refresh: true, onOutput: () => undefined });
    await expectNarwhalCheckAgrees(stack);
    expect((await invalidationSummary(stack, { refresh: true })).nothingInvalidated).to.equal(true);
    const total = s.counts.kept + replaced(s).length;
    expect(await cli("--refresh")).to.equal(`Stack e2e: nothing invalidated; all ${total} pieces of evidence kept.\n`);
  });

  it("lists a fabric budget change as edge verdicts re-judged, apart from replacements, with the required figure old → new", async () => {
    const { stack } = await sharedFleet();
    await stack.setConfig("narwhal-fleet:fabric", { value: JSON.stringify({ headroom: 2 }) });
    try {
      const s = await invalidationSummary(stack);
      expect(replaced(s)).to.deep.equal([]);
      expect(s.gates.map((g) => g.gate)).to.deep.equal(["D"]);
      const edges = updated(s).filter((e) => e.kind === "fabric edge");
      expect(edges.map((e) => e.subject).sort()).to.deep.equal(["sim1 → sim2", "sim1 → sim4", "sim2 → sim1", "sim2 → sim4", "sim4 → sim1", "sim4 → sim2"]);
      for (const e of edges) {
        const required = e.changes.find((c) => c.input === "requiredGbps")!;
        // headroom 1.25 → 2 scales each edge's required rate by 1.6.
        expect(Number(required.new) / Number(required.old)).to.be.closeTo(1.6, 1e-9);
      }
      expect(updated(s).map((e) => e.name)).to.include("fleet-fabric-gate");
    } finally {
      await stack.removeConfig("narwhal-fleet:fabric");
    }
    expect((await invalidationSummary(stack)).nothingInvalidated).to.equal(true);
  });
});

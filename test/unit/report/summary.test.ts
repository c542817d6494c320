import { expect } from "chai";
import * as fs from "node:fs";
import * as path from "node:path";
import type { EngineEvent } from "@pulumi/pulumi/automation";
import { formatSummary } from "../../../lib/report/format";
import { summarise, type InvalidatedEvidence, type InvalidationSummary } from "../../../lib/report/summary";
import { UNKNOWN } from "../../../lib/unknown";

const events = (name: string): EngineEvent[] => JSON.parse(fs.readFileSync(path.join(__dirname, "fixtures", `preview-${name}.json`), "utf8"));
const replaced = (s: InvalidationSummary): InvalidatedEvidence[] => s.gates.flatMap((g) => g.replaced);
const updated = (s: InvalidationSummary): InvalidatedEvidence[] => s.gates.flatMap((g) => g.updated);
const names = (xs: Array<{ name: string }>): string[] => xs.map((x) => x.name).sort();
/** Every piece of evidence the e2e fleet holds: 3 discoveries, replicas, config, 4 × (check, process, generation, capture, sidecar, attestation), 6 edges, the gate. */
const EVIDENCE = 3 + 1 + 1 + 4 * 6 + 6 + 1;

describe("preview report: recorded engine events", () => {
  it("says nothing is invalidated on a converged fleet and keeps every piece of evidence, none of them a component or provider", () => {
    const s = summarise("e2e", events("nochange"));
    expect(s.nothingInvalidated).to.equal(true);
    expect(s.gates).to.deep.equal([]);
    expect(s.counts.kept).to.equal(EVIDENCE);
    expect(s.kept.map((k) => k.gate)).to.not.include("other");
    expect(formatSummary(s)).to.equal(`Stack e2e: nothing invalidated; all ${EVIDENCE} pieces of evidence kept.\n`);
  });

  it("names a restarted engine's generation, capture, sidecar and attestation with their gate, host and reasons", () => {
    const s = summarise("e2e", events("restart"));
    expect(s.gates.map((g) => g.gate)).to.deep.equal(["C", "E"]);
    expect(names(replaced(s))).to.deep.equal(["fleet-attestation-e2", "fleet-attestation-e2-sidecar", "fleet-e2-cache", "fleet-e2-generation"]);
    expect(updated(s)).to.deep.equal([]);
    const byName = new Map(replaced(s).map((e) => [e.name, e]));
    expect(byName.get("fleet-e2-generation")).to.deep.include({ kind: "generation", gate: "C", engine: "e2", host: "sim2", subject: "e2 on sim2", keys: ["generation"] });
    // The refresh saw a new process: the recorded digest against the one it observed, and its state.
    const [moved] = byName.get("fleet-e2-generation")!.changes;
    expect(moved).to.deep.equal({
      input: "generation",
      old: "sha256:b6dd0f874703a9d483fa48a6c06cec505eeb04945c10ecb7fcdda9178f1dffbf",
      new: "sha256:458a76f9e40c1eae247fcf5cf8d6b1718d685916c6b176c9779bd9aea9433dd7",
      observed: "restarted",
    });
    expect(byName.get("fleet-e2-cache")).to.deep.include({ kind: "cache capture", gate: "C", keys: ["generationDigest"] });
    expect(byName.get("fleet-e2-cache")!.changes).to.deep.equal([{ input: "generationDigest", old: "sha256:b6dd0f874703a9d483fa48a6c06cec505eeb04945c10ecb7fcdda9178f1dffbf", new: "(known after apply)" }]);
    expect(byName.get("fleet-attestation-e2-sidecar")).to.deep.include({ kind: "attestation sidecar", gate: "E", engine: "e2", host: "sim2", keys: ["triggers"] });
    // Its keys travel on the create-replacement half only: the report folds the halves into one entry.
    expect(byName.get("fleet-attestation-e2")).to.deep.include({ kind: "attestation", gate: "E", keys: ["attestation", "sidecar"] });
    expect(s.counts).to.deep.include({ replaced: 4, updated: 0, kept: EVIDENCE - 4 });
    expect(names(s.kept)).to.include.members(["fleet-e2-process", "fleet-e2-image-check", "fleet-sim2", "fleet-fabric-sim1-to-sim2", "fleet-attestation-e1"]);
  });

  it("lists a budget change as fabric verdicts re-judged (updates), with the budget's old and new figure, and nothing replaced", () => {
    const s = summarise("e2e", events("budget"));
    expect(replaced(s)).to.deep.equal([]);
    expect(s.gates.map((g) => g.gate)).to.deep.equal(["D"]);
    expect(names(updated(s))).to.deep.equal([
      "fleet-fabric-gate",
      "fleet-fabric-sim1-to-sim2",
      "fleet-fabric-sim1-to-sim4",
      "fleet-fabric-sim2-to-sim1",
      "fleet-fabric-sim2-to-sim4",
      "fleet-fabric-sim4-to-sim1",
      "fleet-fabric-sim4-to-sim2",
    ]);
    const edge = updated(s).find((e) => e.name === "fleet-fabric-sim1-to-sim2")!;
    expect(edge).to.deep.include({ kind: "fabric edge", subject: "sim1 → sim2", keys: ["budget", "requiredGbps"] });
    expect(edge.changes.find((c) => c.input === "requiredGbps")).to.deep.equal({ input: "requiredGbps", old: "0.33554432", new: "0.536870912" });
    const text = formatSummary(s);
    expect(text).to.contain("Re-judged from stored figures, not re-measured (updated):");
    expect(text).to.not.contain("Re-measured (replaced):");
    expect(text).to.contain("requiredGbps: 0.33554432 → 0.536870912");
  });

  it("follows a per-engine override through its host's discovery to every engine on that host, by gate", () => {
    const s = summarise("e2e", events("override"));
    const byGate = Object.fromEntries(s.gates.map((g) => [g.gate, names(g.replaced)]));
    expect(byGate).to.deep.equal({
      A: ["fleet-config", "fleet-sim1"],
      C: ["fleet-e1-cache", "fleet-e1-generation", "fleet-e1-image-check", "fleet-e1-process", "fleet-e4-cache", "fleet-e4-generation", "fleet-e4-image-check", "fleet-e4-process"],
      E: ["fleet-attestation-e1", "fleet-attestation-e1-sidecar", "fleet-attestation-e4", "fleet-attestation-e4-sidecar"],
    });
    const discovery = replaced(s).find((e) => e.name === "fleet-sim1")!;
    expect(discovery).to.deep.include({ kind: "discovery", host: "sim1", subject: "sim1", keys: ["policyDigest"] });
    expect(discovery.changes[0].old).to.match(/^sha256:5ee4fe41/);
    expect(discovery.changes[0].new).to.match(/^sha256:0e123f8b/);
    // The image check's engine id is unknown until its plan is: its name still says which engine.
    expect(replaced(s).find((e) => e.name === "fleet-e4-image-check")).to.deep.include({ engine: "e4", host: "sim1", subject: "e4 on sim1" });
    expect(replaced(s).find((e) => e.name === "fleet-e4-process")).to.deep.include({ kind: "engine process", engine: "e4", keys: ["triggers"] });
    expect(names(updated(s))).to.deep.equal(["fleet-replicas"]);
    expect(names(s.kept)).to.include.members(["fleet-sim2", "fleet-sim4", "fleet-e2-generation", "fleet-fabric-gate"]);
  });

  it("says who serves during the up: an engine whose proof is replaced is out until the router's swap, the rest serve throughout", () => {
    expect(summarise("e2e", events("nochange")).serving).to.deep.equal({ out: [], throughout: ["e1", "e2", "e3", "e4"] });
    const restart = summarise("e2e", events("restart"));
    expect(restart.serving).to.deep.equal({ out: [{ engine: "e2", why: "its live process changed since it was proved" }], throughout: ["e1", "e3", "e4"] });
    expect(formatSummary(restart)).to.contain("  out until the swap: e2 (its live process changed since it was proved)\n  serving throughout: e1, e3, e4\n");
    // A budget change re-judges fabric verdicts only: every engine keeps serving, and the report says nothing of it.
    expect(summarise("e2e", events("budget")).serving.out).to.deep.equal([]);
    expect(formatSummary(summarise("e2e", events("budget")))).to.not.contain("Serving during the up");
    expect(summarise("e2e", events("override")).serving).to.deep.equal({
      out: [
        { engine: "e1", why: "its process starts again (a new process)" },
        { engine: "e4", why: "its process starts again (a new process)" },
      ],
      throughout: ["e2", "e3"],
    });
  });

  it("says when the KV wave takes every engine out, and why the whole component restarts", () => {
    const generation = (engineId: string, keys: string[]) => ({
      resourcePreEvent: { metadata: { op: "replace", urn: `urn:pulumi:s::p::narwhal:engine:Engine$pulumi-nodejs:dynamic/narwhal:EngineGeneration::fleet-${engineId}-generation`, type: "pulumi-nodejs:dynamic/narwhal:EngineGeneration", keys, old: { custom: true, inputs: { engineId, hostAlias: "sim1" }, outputs: {} }, new: { custom: true, inputs: { engineId, hostAlias: "sim1" } } } },
    });
    const reason = "NIXL 0.7.1 on e1, e2 predates 1.5.0 (ai-dynamo/nixl #1987): ... so the whole KV component restarts together";
    const wave = { resourcePreEvent: { metadata: { op: "update", urn: "urn:pulumi:s::p::pulumi-nodejs:dynamic/narwhal:PeerWave::fleet-kv-wave-1", type: "pulumi-nodejs:dynamic/narwhal:PeerWave", old: { custom: true, inputs: { members: [{ engineId: "e1" }, { engineId: "e2" }], scope: { kind: "component", reason } } }, new: { custom: true, inputs: { members: UNKNOWN, scope: { kind: "component", reason } } } } } };
    const s = summarise("e2e", [generation("e1", ["processIdentity"]), generation("e2", ["peers"]), wave]);
    expect(s.serving).to.deep.equal({
      out: [
        { engine: "e1", why: "its process starts again (a new process)" },
        { engine: "e2", why: "the KV wave restarts it: a peer started anew" },
      ],
      throughout: [],
      wave: reason,
    });
    const text = formatSummary(s);
    expect(text).to.contain(`  the whole KV component restarts together: ${reason}\n`);
    expect(text).to.contain("  serving throughout: none, so nothing is served from the first stop until the swap\n");
  });

  it("never prints a secret: the engine's marker becomes [secret], and the text and JSON hold no ciphertext marker", () => {
    for (const name of ["nochange", "restart", "budget", "override"]) {
      const s = summarise("e2e", events(name));
      for (const out of [formatSummary(s), JSON.stringify(s)]) {
        expect(out).to.not.contain("4dabf18193072939515e22adb298388d");
        expect(out).to.not.contain("ciphertext");
        expect(out).to.not.contain(UNKNOWN);
      }
    }
  });
});

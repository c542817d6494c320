/**
 * The preview report (`npm run invalidated`) as an operator and another tool see it: the summary function
 * of lib/report and the npm script, each on a real preview of the shared fleet.
 */
import { expect } from "chai";
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import { promisify } from "node:util";
import type { Stack } from "@pulumi/pulumi/automation";
import { invalidationSummary } from "../../../scripts/stack/preview";
import type { InvalidatedEvidence, InvalidationSummary } from "../../../lib/report/summary";
import { CONTROLLER_CHECKS } from "./names";
import { API_KEY, PROJECT_ROOT } from "./stack";

const run = promisify(execFile);

/** The command as an operator types it, in the project's environment (the npm script sources scripts/env.sh). */
export async function invalidatedCli(stack: string, ...args: string[]): Promise<string> {
  const { stdout } = await run("npm", ["run", "--silent", "invalidated", "--", "--stack", stack, ...args], { cwd: PROJECT_ROOT, env: process.env, maxBuffer: 16 * 1024 * 1024, timeout: 240_000 });
  return stdout;
}

export const replaced = (s: InvalidationSummary): InvalidatedEvidence[] => s.gates.flatMap((g) => g.replaced);
export const updated = (s: InvalidationSummary): InvalidatedEvidence[] => s.gates.flatMap((g) => g.updated);
/** name → gate, kind and reasons: what the report says about each piece of evidence it names. */
const said = (xs: InvalidatedEvidence[]) => Object.fromEntries(xs.map((e) => [e.name, { gate: e.gate, kind: e.kind, subject: e.subject, keys: e.keys }]));

/** Neither the engine API key nor any line of the SSH private key may reach the report. */
function expectNoSecret(out: string, privateKeyPath: string): void {
  expect(out).to.not.contain(API_KEY);
  const keyLines = fs.readFileSync(privateKeyPath, "utf8").split("\n").filter((l) => l.length > 20 && !l.startsWith("-----"));
  for (const l of keyLines) expect(out).to.not.contain(l);
  expect(out).to.not.contain("PRIVATE KEY");
}

/**
 * After e2 (on sim2) restarted by hand: the report `s` (of the test's refreshing preview) names exactly its
 * invalidated evidence, by gate and reason, the CLI says the same, and both keep the rest. Returns how many pieces of
 * evidence it accounts for, kept or not.
 */
export async function expectReportOfRestartedE2(stack: Stack, s: InvalidationSummary, privateKeyPath: string, provedDigest: string): Promise<number> {
  const expected = {
    "fleet-e2-generation": { gate: "C", kind: "generation", subject: "e2 on sim2", keys: ["generation"] },
    "fleet-e2-cache": { gate: "C", kind: "cache capture", subject: "e2 on sim2", keys: ["generationDigest"] },
    "fleet-attestation-e2-sidecar": { gate: "E", kind: "attestation sidecar", subject: "e2 on sim2", keys: ["triggers"] },
    "fleet-attestation-e2": { gate: "E", kind: "attestation", subject: "e2 on sim2", keys: ["attestation", "sidecar"] },
  };
  // What the fleet measured across e2 follows it; their reasons are inputs not known until e2 is measured again.
  const followers = {
    "fleet-profiles-e2": { gate: "F", kind: "profile", subject: "e2 on sim2" },
    "fleet-preflight": { gate: "F", kind: "preflight", subject: "fleet" },
    "fleet-router-host-router-port-check": { gate: "G", kind: "router port check", subject: "fleet" },
    ...Object.fromEntries(CONTROLLER_CHECKS.map((n) => [n, { gate: "G", kind: "router controller check", subject: "fleet" }])),
    "fleet-router-host-router-proof": { gate: "G", kind: "router proof", subject: "fleet" },
    "fleet-router-host-router-record": { gate: "G", kind: "router record", subject: "fleet" },
  };
  const sayWithoutFollowerKeys = (xs: InvalidatedEvidence[]) =>
    Object.fromEntries(Object.entries(said(xs)).map(([name, e]) => [name, name in followers ? { gate: e.gate, kind: e.kind, subject: e.subject } : e]));
  expect(sayWithoutFollowerKeys(replaced(s))).to.deep.equal({ ...expected, ...followers });
  for (const name of Object.keys(followers)) expect(said(replaced(s))[name].keys, name).to.not.be.empty;
  // The store is rewritten in place with e2's new row: nothing of it is measured; the router swaps onto it
  // in place, serving until then, and the freshness exporter's expectation follows what the router serves.
  expect(updated(s).map((e) => [e.name, e.gate, e.kind]).sort()).to.deep.equal([
    ["fleet-profiles-store", "F", "profile store"],
    ["fleet-router-host-monitoring-freshness-expected", "G", "monitoring"],
    ["fleet-router-host-router-process", "G", "router process"],
  ]);
  const generation = replaced(s).find((e) => e.name === "fleet-e2-generation")!;
  // The refresh saw another process: the proved digest against the observed one.
  expect(generation.changes).to.have.length(1);
  expect(generation.changes[0]).to.deep.include({ input: "generation", old: provedDigest, observed: "restarted" });
  expect(generation.changes[0].new).to.match(/^sha256:[0-9a-f]{64}$/).and.not.equal(generation.changes[0].old);
  expect(s.kept.map((k) => k.name)).to.include.members(["fleet-e2-process", "fleet-e2-image-check", "fleet-sim2", "fleet-e1-generation", "fleet-fabric-gate"]);

  const json = await invalidatedCli(stack.name, "--json", "--refresh");
  expectNoSecret(json, privateKeyPath);
  const fromCli = JSON.parse(json) as InvalidationSummary;
  expect(said(replaced(fromCli))).to.deep.equal(said(replaced(s)));
  expect(fromCli.kept.map((k) => k.name)).to.deep.equal(s.kept.map((k) => k.name));
  const text = await invalidatedCli(stack.name, "--refresh");
  expectNoSecret(text, privateKeyPath);
  expect(text).to.contain("Gate C: engines").and.contain("Gate E: attestation").and.contain("Gate F: profiles").and.contain("fleet-e2-generation");
  return s.counts.kept + replaced(s).length + updated(s).length;
}

/** A converged fleet: nothing invalidated, through the function and in the CLI's one line. */
export async function expectReportKeepsAll(stack: Stack, total: number): Promise<void> {
  expect((await invalidationSummary(stack, { refresh: true })).nothingInvalidated).to.equal(true);
  expect(await invalidatedCli(stack.name, "--refresh")).to.equal(`Stack ${stack.name}: nothing invalidated; all ${total} pieces of evidence kept.\n`);
}

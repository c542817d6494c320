/**
 * The preflight against the pinned `narwhal-check --format json` on a fleet that declares its
 * engine_contract, as Gate E leaves it: two engine simulators, each with narwhal-inference's own
 * attestation sidecar (`narwhal-attest`) serving the document built from its proved generation, captured
 * cache layout and the NIXL versions the image check's runtime check read of the simulated vLLM package.
 * Both print the same contract fingerprint and call the run a pass (exit 0), and narwhal's own
 * `finalize-fleet` writes exactly the program's contract. With the NIXL versions unread (an attestation
 * from an image check made before they were read), both skip `connector_version, transfer_version` as
 * undeclared and call the run degraded (exit 3); the provider passes that unless strict. Every process stops.
 */
import { expect } from "chai";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { sidecarStopScript } from "../../lib/attestation/sidecar";
import { runGates } from "../../dynamic-providers/preflight/provider";
import { parseNarwhalReport } from "../../lib/preflight/narwhal-report";
import { makeModel, removeTemps, ROOT, stopAll } from "../unit/sim-engine/helpers";
import { API_KEY, CHECK_DIGEST, checkedTransfer, fleetOf, type Attested } from "./support/contract-fleet";
import { shBounded as sh } from "../support/sh-async";

const CHECK = path.join(ROOT, ".tools", "venv", "bin", "narwhal-check");
const PYTHON = path.join(ROOT, ".tools", "venv", "bin", "python");

/** narwhal-check and our preflight over the same document: both reports, and our gates' verdicts checked against theirs. */
async function bothChecks(f: Awaited<ReturnType<typeof fleetOf>>, attested: Attested[]) {
  const narwhal = spawnSync(CHECK, ["--fleet", f.file, "--format", "json"], { env: { ...process.env, NARWHAL_ENGINE_API_KEY: API_KEY }, timeout: 120_000 });
  const result = JSON.parse(narwhal.stdout.toString());
  const theirs = parseNarwhalReport(narwhal.stderr.toString());
  const inputs = {
    stack: "provider-tests",
    fleetDocument: f.doc,
    engines: attested.map((a) => ({ engineId: a.id, generationDigest: a.generation.generationDigest, attestationDigest: a.attestationDigest, profileDigest: "sha256:" + "b2".repeat(32) })),
    profiles: f.rows,
    profileStoreDigest: "sha256:" + "c3".repeat(32),
    pairs: "mesh" as const,
    repeats: 1,
    schedule: "concurrent" as const,
    apiKey: API_KEY,
  };
  const ours = await runGates(inputs);
  const mine = Object.fromEntries(ours.gates.map((g) => [g.gate, g.verdict]));
  console.log(`      narwhal-check exit ${narwhal.status} (${result.status}); ours ${ours.status}: ${JSON.stringify(mine)}; warnings ${JSON.stringify(ours.warnings)}`);
  expect(mine, `ours vs narwhal-check\n${narwhal.stderr.toString()}\nours: ${JSON.stringify(ours.gates, null, 1)}`).to.deep.equal(theirs.verdicts);
  // The contract lines, fingerprint included, are narwhal's own.
  const contractLines = ours.gates.find((g) => g.gate === "contract")!.lines;
  expect(contractLines.slice(0, 2)).to.deep.equal(theirs.lines.contract.slice(0, 2));
  expect(contractLines[0].message).to.equal(`declared engine contract ${f.contract.fingerprint}`);
  const unique = (notes: ReadonlyArray<{ message: string }>) => [...new Set(notes.map((n) => n.message))];
  expect({ status: ours.narwhal.status, exitCode: ours.narwhal.exitCode, skipped: unique(ours.skipped), warnings: unique(ours.warnings) }).to.deep.equal({
    status: result.status,
    exitCode: narwhal.status,
    skipped: result.data.skipped,
    warnings: result.data.warnings,
  });
  return { ours, narwhal, contractLines, inputs };
}

describe("providers: preflight agrees with narwhal-check on a fleet with an engine_contract", function () {
  this.timeout(300_000);
  const attested: Attested[] = [];

  afterEach(async () => {
    for (const a of attested.splice(0)) await sh(sidecarStopScript(a.sidecar));
    await stopAll();
  });
  after(() => removeTemps());

  it("a contract with the NIXL versions the runtime check read: the same fingerprint and a pass in both, and finalize-fleet writes the same contract", async () => {
    const transfer = checkedTransfer(makeModel());
    expect(transfer).to.deep.equal({ nixlVersion: "0.7.1", connectorVersion: 9, checkDigest: CHECK_DIGEST });
    const f = await fleetOf(transfer, attested);
    expect(f.contract.undeclared).to.deep.equal([]);
    expect(f.contract.contract).to.include({ transfer_version: "0.7.1", connector_version: 9 });
    const { ours, narwhal } = await bothChecks(f, attested);
    expect([ours.status, narwhal.status, ours.skipped]).to.deep.equal(["pass", 0, []]);

    // narwhal's finalize-fleet over the same sidecars, on the document without a contract: it accepts
    // every engine's contract as complete and writes the one the program declared.
    const dir = path.dirname(f.file);
    const bare = path.join(dir, "fleet.bare.json");
    fs.writeFileSync(bare, JSON.stringify(f.withoutContract, null, 2), { mode: 0o600 });
    const finalize = spawnSync(
      PYTHON,
      ["-c", "import json, sys; from pathlib import Path; from narwhal.deployment.attestation_contract.fleet import finalize_fleet; print(json.dumps(finalize_fleet(Path(sys.argv[1])).fields()))", bare],
      { cwd: dir, env: { ...process.env, NARWHAL_ENGINE_API_KEY: API_KEY }, encoding: "utf8", timeout: 120_000 },
    );
    expect(finalize.status, finalize.stderr).to.equal(0);
    expect(JSON.parse(finalize.stdout)).to.deep.equal(f.contract.contract);
    expect(JSON.parse(fs.readFileSync(bare, "utf8")).engine_contract).to.deep.equal(f.contract.contract);
  });

  it("a contract from a check made before the NIXL versions were read: both skip them as undeclared, a degraded run (exit 3) the provider passes unless strict", async () => {
    const f = await fleetOf({ nixlVersion: null, connectorVersion: null, checkDigest: CHECK_DIGEST }, attested);
    expect(f.contract.undeclared).to.deep.equal(["connector_version", "transfer_version"]);
    const { ours, narwhal, contractLines, inputs } = await bothChecks(f, attested);
    expect(contractLines[1]).to.deep.equal({ status: "skip", message: `contract ${f.contract.fingerprint} undeclared: connector_version, transfer_version` });
    expect([ours.status, narwhal.status]).to.deep.equal(["degraded", 3]);
    let strict = "";
    await runGates({ ...inputs, strict: true }).catch((err: Error) => (strict = err.message));
    expect(strict).to.match(/^preflight degraded and preflight\.strict is on: skipped contract \(contract [0-9a-f]{16} undeclared: connector_version, transfer_version\); the router is not started on it /);
  });
});

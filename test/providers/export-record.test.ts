/**
 * The sanitised export of evidence a real provider wrote: Gate C's EngineGeneration proves an engine
 * simulator listening on 127.0.0.2 (a loopback address the export must still hide, unlike 127.0.0.1)
 * and writes its record into this project's store under a throwaway stack; the export then names the
 * engine's host by its alias from the config.
 */
import { expect } from "chai";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { provider as generationProvider } from "../../dynamic-providers/engine-generation/provider";
import type { EngineGenerationOutputs } from "../../dynamic-providers/engine-generation/schema";
import { parseFleetConfig } from "../../lib/config";
import { EvidenceStore, evidenceRoot, exportAliases, exportDeploymentRecord, sourceRevision } from "../../lib/evidence";
import { KV_BOTH, makeModel, removeTemps, spawnEngine, stopAll, type SimEngine } from "../unit/sim-engine/helpers";

const API_KEY = "sk-narwhal-export-5d2e8a";
const ADDRESS = "127.0.0.2";
const STACK = `export-record-${process.pid}`;

describe("export of a record written by a real provider run", function () {
  this.timeout(60_000);
  // The provider writes where the dynamic provider host runs: runs/<stack>/evidence of this project.
  const project = process.cwd();
  let engine: SimEngine;
  let out: string;

  before(async () => {
    engine = await spawnEngine({
      model: makeModel(),
      args: ["--served-model-name", "tiny", "--api-key", API_KEY, "--tensor-parallel-size", "2", "--block-size", "16", "--kv-transfer-config", KV_BOTH, "--host", ADDRESS],
    });
    out = fs.mkdtempSync(path.join(os.tmpdir(), "export-record-"));
  });

  after(async () => {
    await stopAll();
    removeTemps();
    fs.rmSync(path.join(project, "runs", STACK), { recursive: true, force: true });
    fs.rmSync(out, { recursive: true, force: true });
  });

  it("exports the Gate C record with the engine's address as its host alias and no key or private path", async () => {
    const url = `http://${ADDRESS}:${engine.port}`;
    const { outs } = await generationProvider.create({
      engineId: "e0",
      hostAlias: "gpu1",
      url,
      planSha256: "sha256:" + "5a".repeat(32),
      expectedVersion: "0.29.0",
      servedName: "tiny",
      apiKey: API_KEY,
      processIdentity: { hostAlias: "gpu1", pid: engine.proc.pid! },
      probeTimeoutS: 30,
      stack: STACK,
    });
    const evidence = (outs as EngineGenerationOutputs).evidence!;
    const store = new EvidenceStore(evidenceRoot(project, STACK));
    const spec = parseFleetConfig({
      hosts: [
        { alias: "gpu1", destination: `ops@${ADDRESS}`, fabricInterface: "lo" },
        { alias: "gpu2", destination: "ops@127.0.0.3", fabricInterface: "lo" },
      ],
      engines: [
        { id: "e0", host: "gpu1" },
        { id: "e1", host: "gpu2" },
      ],
      model: { servedName: "tiny", checkpointDir: "/srv/models/tiny" },
    });
    const aliases = exportAliases({ spec, stack: STACK, secrets: [API_KEY], projectRoot: project, home: os.homedir() });
    const result = await exportDeploymentRecord({ store, stack: STACK, aliases, outDir: path.join(out, "x"), sourceRevision: sourceRevision(project) });

    const record = JSON.parse(fs.readFileSync(path.join(out, "x", "records", evidence.relativePath), "utf8"));
    expect(record.kind).to.equal("generation");
    expect(record.inputs.url).to.equal(`http://host:gpu1:${engine.port}`);
    expect(record.observations.generationDigest).to.equal((outs as EngineGenerationOutputs).generationDigest);

    const index = JSON.parse(fs.readFileSync(path.join(out, "x", "deployment-record.json"), "utf8"));
    const gateC = index.gates.find((g: { gate: string }) => g.gate === "C");
    expect(gateC.status).to.equal("pass");
    expect(gateC.steps.map((s: { record: unknown }) => s.record)).to.deep.equal([evidence]);
    expect(gateC.steps[0].sourceRevision).to.equal(sourceRevision(project));

    for (const name of Object.keys(result.files)) {
      const text = fs.readFileSync(path.join(out, "x", name), "utf8");
      expect(text, name).not.to.include(ADDRESS);
      expect(text, name).not.to.include(API_KEY);
      expect(text, name).not.to.include(project);
    }
    // The private original still says where the engine was: only the export is rewritten.
    expect((await store.read(evidence.relativePath, evidence.digest)).inputs.url).to.equal(url);
  });
});

/**
 * Writes Gate A's generated configuration into the evidence store: one 0600 artifact per file and one
 * record listing them. Contents hold private destinations and addresses, so only digests and relative
 * paths reach Pulumi state; the contents themselves are never outputs.
 */
import { createHash } from "node:crypto";
import type * as pulumi from "@pulumi/pulumi";
import { EvidenceStore, evidenceRecord, evidenceRoot, sourceRevision } from "../../lib/evidence";
import { sha256Json } from "../../lib/digest";
import type { DeploymentConfigInputs, DeploymentConfigOutputs } from "./types";
import { withEvidenceIntegrity } from "../integrity";

async function write(inputs: DeploymentConfigInputs): Promise<DeploymentConfigOutputs> {
  const root = process.cwd();
  const store = new EvidenceStore(evidenceRoot(root, inputs.stack));
  const startedAt = new Date().toISOString();
  const artifacts = [];
  for (const [name, contents] of Object.entries(inputs.files).sort(([a], [b]) => (a < b ? -1 : 1))) {
    artifacts.push(await store.writeArtifact("deployment-config", name, contents));
  }
  const record = await store.write(
    evidenceRecord({
      kind: "deployment-config",
      subject: { kind: "fleet", alias: inputs.stack },
      stack: inputs.stack,
      inputs: Object.fromEntries(artifacts.map((a) => [a.name, a.sha256])),
      commands: [],
      startedAt,
      endedAt: new Date().toISOString(),
      sourceRevision: sourceRevision(root),
      observations: { files: artifacts.map((a) => a.name) },
      verdict: { status: "info", reasons: [] },
      artifacts,
    }),
  );
  return {
    stack: inputs.stack,
    configDigest: sha256Json(Object.fromEntries(artifacts.map((a) => [a.name, a.sha256]))),
    written: Object.fromEntries(artifacts.map((a) => [a.name, { relativePath: a.relativePath, sha256: a.sha256, bytes: a.bytes }])),
    record: { relativePath: record.relativePath, digest: record.digest },
  };
}

export const provider: pulumi.dynamic.ResourceProvider = withEvidenceIntegrity({
  async diff(_id: string, olds: DeploymentConfigOutputs, news: DeploymentConfigInputs) {
    // Outputs keep each file's digest as written; a file added, dropped or changed writes a new record.
    const names = Object.keys(news.files);
    const changed =
      names.length !== Object.keys(olds.written ?? {}).length || names.some((n) => olds.written?.[n]?.sha256 !== fileDigest(news.files[n]));
    return { changes: changed || olds.stack !== news.stack, replaces: changed ? ["files"] : [] };
  },
  async create(inputs: DeploymentConfigInputs) {
    const outs = await write(inputs);
    return { id: outs.configDigest.slice(7, 23), outs };
  },
  async update(_id: string, _olds: DeploymentConfigOutputs, news: DeploymentConfigInputs) {
    return { outs: await write(news) };
  },
});

function fileDigest(contents: string): string {
  return "sha256:" + createHash("sha256").update(contents, "utf8").digest("hex");
}

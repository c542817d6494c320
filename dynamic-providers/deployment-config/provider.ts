/**
 * Writes Gate A's generated configuration into the evidence store: one 0600 artifact per file and one
 * record listing them. Contents hold private destinations and addresses, so only digests and relative
 * paths reach Pulumi state; the contents themselves are never outputs.
 */
import type * as pulumi from "@pulumi/pulumi";
import { sha256Json } from "../../lib/digest";
import { providerEvidence } from "../../lib/evidence/provider-evidence";
import { evidenceProvider } from "../evidence-provider";
import { textDigest } from "../../lib/router/serve";
import { deploymentConfigInputs, type DeploymentConfigInputs, type DeploymentConfigOutputs } from "./check";

async function write(inputs: DeploymentConfigInputs): Promise<DeploymentConfigOutputs> {
  const store = providerEvidence(inputs.stack);
  const startedAt = new Date().toISOString();
  const artifacts = [];
  for (const [name, contents] of Object.entries(inputs.files).sort(([a], [b]) => (a < b ? -1 : 1))) {
    artifacts.push(await store.artifact("deployment-config", name, contents));
  }
  const record = await store.record({
    kind: "deployment-config",
    subject: { kind: "fleet", alias: inputs.stack },
    inputs: Object.fromEntries(artifacts.map((a) => [a.name, a.sha256])),
    commands: [],
    startedAt,
    endedAt: new Date().toISOString(),
    observations: { files: artifacts.map((a) => a.name) },
    verdict: { status: "info", reasons: [] },
    artifacts,
  });
  return {
    stack: inputs.stack,
    configDigest: sha256Json(Object.fromEntries(artifacts.map((a) => [a.name, a.sha256]))),
    written: Object.fromEntries(artifacts.map((a) => [a.name, { relativePath: a.relativePath, sha256: a.sha256, bytes: a.bytes }])),
    record: { relativePath: record.relativePath, digest: record.digest },
  };
}

// The contents are never outputs: the files are compared by the digests each was written with.
export const provider: pulumi.dynamic.ResourceProvider = evidenceProvider<DeploymentConfigInputs, DeploymentConfigOutputs>({
  measuredAgainst: [],
  updatable: ["stack"],
  inputs: deploymentConfigInputs,
  // A file added, dropped or changed writes a new record.
  addition(olds, news) {
    const names = Object.keys(news.files);
    const changed =
      names.length !== Object.keys(olds.written ?? {}).length || names.some((n) => olds.written?.[n]?.sha256 !== textDigest(news.files[n]));
    return { replaces: changed ? ["files"] : [] };
  },
  async create(inputs) {
    const outs = await write(inputs);
    return { id: outs.configDigest.slice(7, 23), outs };
  },
  update: (_olds, news) => write(news),
});

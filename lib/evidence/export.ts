/**
 * The sanitised export of one stack's deployment record: every record in the store (checked against
 * its digest), the per-gate index, and the text artifacts, each rewritten by one {@link Sanitiser} so a
 * private address, path or credential has one alias across every file. Binary artifacts are withheld:
 * their bytes cannot be rewritten without being corrupted.
 */
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { canonicalJson } from "../digest";
import { DEPLOYMENT_RECORD_KIND, deploymentRecord, deploymentRecordEvidence, type DeploymentRecord, type EngineHosts, type StoredRecord } from "./deployment-record";
import { EvidenceError } from "./errors";
import { Sanitiser, type ExportAliases } from "./sanitise";
import type { EvidenceStore } from "./store";

export interface ExportOptions {
  readonly store: EvidenceStore;
  readonly stack: string;
  readonly aliases: ExportAliases;
  /** Folder to write; created, and refused when it already holds anything. */
  readonly outDir: string;
  /** This program's revision, for the index record. */
  readonly sourceRevision: string;
  /** Engine id -> host alias (from the stack config), so steps about an engine name its host. */
  readonly engineHosts?: EngineHosts;
}

export interface ExportResult {
  /** Where the private index went in the store, and its digest. */
  readonly index: { relativePath: string; digest: string };
  /** Files written under `outDir`, relative to it, with the SHA-256 of the bytes written. */
  readonly files: Record<string, string>;
  /** Artifacts left out, by store path, and why. */
  readonly withheld: Record<string, string>;
  /** The private (unsanitised) per-gate index that was stored. */
  readonly deployment: DeploymentRecord;
}

const sha256 = (bytes: Buffer | string) => `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
const UTF8 = new TextDecoder("utf-8", { fatal: true });

function textOf(bytes: Buffer): string | undefined {
  if (bytes.includes(0)) return undefined;
  try {
    return UTF8.decode(bytes);
  } catch {
    return undefined;
  }
}

/** Every record of `stack` in the store, each read back through its digest (a changed file stops the export). */
export async function storedRecords(store: EvidenceStore, stack: string): Promise<StoredRecord[]> {
  const out: StoredRecord[] = [];
  for (const listed of await store.list()) {
    if (listed.kind === DEPLOYMENT_RECORD_KIND) continue;
    const record = await store.read(listed.relativePath, listed.digest);
    if (record.stack === stack) out.push({ relativePath: listed.relativePath, digest: listed.digest, record });
  }
  return out;
}

function refuseNonEmpty(outDir: string): void {
  if (!fs.existsSync(outDir)) return;
  if (!fs.statSync(outDir).isDirectory()) throw new EvidenceError("NARWHAL_EVIDENCE_EXPORT", `export folder ${outDir} is not a folder`);
  // Mixing two exports would mix two alias numberings: "addr:1" would name two machines.
  if (fs.readdirSync(outDir).length > 0) throw new EvidenceError("NARWHAL_EVIDENCE_EXPORT", `export folder ${outDir} is not empty; name a new folder for each export`);
}

/**
 * Writes the private index into the store, then the sanitised export under `outDir`:
 *
 * - `deployment-record.json`: the per-gate index (host aliases, source revision, starting state,
 *   commands, exit statuses, artifacts and paths);
 * - `records/<kind>/<hex>.json`: each record, named by its private store path;
 * - `artifacts/<kind>/<hex>`: text artifacts;
 * - `manifest.json`: the SHA-256 of each file written and the artifacts withheld.
 *
 * Digests inside the export name the private originals, so whoever holds the store can match them.
 */
export async function exportDeploymentRecord(options: ExportOptions): Promise<ExportResult> {
  const { store, stack, aliases, outDir, sourceRevision } = options;
  refuseNonEmpty(outDir);
  const records = await storedRecords(store, stack);
  const index = deploymentRecord(stack, records, options.engineHosts);
  const written = await store.write(deploymentRecordEvidence(index, sourceRevision));

  const sanitiser = new Sanitiser(aliases);
  const files: Record<string, string> = {};
  const withheld: Record<string, string> = {};
  const put = (relative: string, content: string) => {
    const file = path.join(outDir, relative);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, content, { flag: "wx" });
    files[relative] = sha256(content);
  };

  fs.mkdirSync(outDir, { recursive: true });
  put("deployment-record.json", JSON.stringify({ index: written, ...(sanitiser.value(index) as DeploymentRecord) }, null, 2) + "\n");
  const artifacts = new Map<string, string>();
  for (const { relativePath, record } of records) {
    put(path.posix.join("records", relativePath), canonicalJson(sanitiser.record(record)) + "\n");
    for (const a of record.artifacts) artifacts.set(a.relativePath, a.sha256);
  }
  for (const [relativePath, digest] of [...artifacts].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const text = textOf(await store.readArtifact(relativePath, digest));
    if (text === undefined) withheld[relativePath] = "binary content cannot be sanitised";
    else put(path.posix.join("artifacts", relativePath.replace("/artifacts/", "/")), sanitiser.text(text));
  }
  fs.writeFileSync(path.join(outDir, "manifest.json"), JSON.stringify({ stack, files, withheld }, null, 2) + "\n", { flag: "wx" });
  return { index: written, files, withheld, deployment: index };
}

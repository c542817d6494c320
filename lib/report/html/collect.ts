/**
 * Reads a stack's evidence store for the report: every record, each checked against the digest its
 * name carries (a file altered after it was written is listed as invalid evidence, never drawn), and
 * the sidecar entry of each profile shown.
 */
import type { EvidenceStore } from "../../evidence/store";
import { reportData, type SamplesReading } from "./extract";
import { selectRecords } from "./select";
import type { InvalidEvidence, ReportData, StoredRecord } from "./types";

/** The artifact name the profile provider gives its sidecar entry. */
export const SAMPLES_ARTIFACT = "engine-samples.json";

export interface CollectOptions {
  readonly stack: string;
  /** Relative path → digest of the records the stack's outputs hold; absent: newest per kind and subject. */
  readonly pointers?: ReadonlyMap<string, string>;
  /** Engine id → the generation digest the stack's outputs say it runs (see `heldGenerations`). */
  readonly generations?: ReadonlyMap<string, string>;
  readonly now?: Date;
}

async function samplesOf(store: EvidenceStore, s: StoredRecord): Promise<SamplesReading | undefined> {
  const artifact = s.record.artifacts.find((a) => a.name === SAMPLES_ARTIFACT);
  if (!artifact) return undefined;
  try {
    return { entry: JSON.parse((await store.readArtifact(artifact.relativePath, artifact.sha256)).toString("utf8")) };
  } catch (error) {
    return { problem: (error as Error).message };
  }
}

export async function collectReport(store: EvidenceStore, opts: CollectOptions): Promise<ReportData> {
  const records: StoredRecord[] = [];
  const invalid: InvalidEvidence[] = [];
  for (const listed of await store.list()) {
    try {
      records.push({ relativePath: listed.relativePath, digest: listed.digest, record: await store.read(listed.relativePath, listed.digest) });
    } catch (error) {
      invalid.push({ relativePath: listed.relativePath, reason: (error as Error).message });
    }
  }
  const held = new Map(opts.pointers ?? []);
  for (const r of records) {
    const want = r.record.kind === "generation" ? opts.generations?.get(r.record.subject.alias) : undefined;
    if (want && (r.record.observations as { generationDigest?: unknown } | null)?.generationDigest === want) held.set(r.relativePath, r.digest);
  }
  const pointers = held.size > 0 ? held : undefined;
  const selection = selectRecords(records, pointers);
  const samples = new Map<string, SamplesReading>();
  for (const c of selection.get("profile")?.values() ?? []) {
    const reading = await samplesOf(store, c.stored);
    if (reading) samples.set(c.stored.relativePath, reading);
  }
  return reportData({
    stack: opts.stack,
    generatedAt: (opts.now ?? new Date()).toISOString(),
    selection,
    selectedBy: pointers ? "stack outputs" : "newest in store",
    byPath: new Map(records.map((r) => [r.relativePath, r])),
    samples,
    invalid,
  });
}

/**
 * Which measurements an `up` took again, read from the evidence store rather than from Pulumi's plan:
 * every record carries its kind, its subject and when it was started, so a record started after a
 * snapshot is a measurement (or judgement) that `up` made. The names are the resources the preview uses,
 * so a test can hold what was re-measured against what the preview said would be replaced.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import type { Stack } from "@pulumi/pulumi/automation";
import { EvidenceStore, evidenceRoot } from "../../../lib/evidence/store";
import { expect } from "chai";
import { expectNothingPlanned, type PlannedStep } from "./preview";
import { PROJECT_ROOT } from "./stack";

interface Ref {
  relativePath: string;
  digest: string;
}

interface StoredRecord {
  kind: string;
  subject: { kind: string; alias: string };
  startedAt: string;
}

/** The store and the resources holding evidence at one moment, before an `up`. */
export interface EvidenceSnapshot {
  readonly stack: string;
  /** Record paths in the store when the snapshot was taken. */
  readonly records: ReadonlySet<string>;
  /** `<record kind> <subject kind>:<alias>` -> the resource whose own record has that kind and subject. */
  readonly owners: ReadonlyMap<string, string>;
  /** When the snapshot was taken: every record started since is a new measurement. */
  readonly takenAt: number;
}

const isRef = (v: unknown): v is Ref => typeof v === "object" && v !== null && typeof (v as Ref).relativePath === "string" && typeof (v as Ref).digest === "string";

const subjectKey = (r: StoredRecord) => `${r.kind} ${r.subject.kind}:${r.subject.alias}`;

function readRecord(stack: string, relativePath: string): StoredRecord {
  return JSON.parse(fs.readFileSync(path.join(evidenceRoot(PROJECT_ROOT, stack), relativePath), "utf8")) as StoredRecord;
}

async function recordPaths(stack: string): Promise<Set<string>> {
  return new Set((await new EvidenceStore(evidenceRoot(PROJECT_ROOT, stack)).list()).map((r) => r.relativePath));
}

/**
 * The resources that hold a record of their own, by the kind and subject of that record. A resource's own
 * record is its `evidence` (or, for the generated configuration, `record`), as the evidence check reads it
 * (dynamic-providers/integrity.ts); records it only cites (a gate's edges) belong to their writers.
 */
async function owners(stack: Stack): Promise<Map<string, string>> {
  const resources = (await stack.exportStack()).deployment.resources as Array<{ urn: string; outputs?: Record<string, unknown> }>;
  const byKey = new Map<string, string>();
  for (const r of resources) {
    const own = [r.outputs?.evidence, r.outputs?.record].filter(isRef);
    const name = r.urn.split("::").pop()!;
    for (const ref of own) {
      const key = subjectKey(readRecord(stack.name, ref.relativePath));
      const other = byKey.get(key);
      // Two writers of one kind and subject would make a new record's owner a guess.
      if (other !== undefined && other !== name) throw new Error(`records "${key}" are written by both ${other} and ${name}`);
      byKey.set(key, name);
    }
  }
  return byKey;
}

/** Takes the snapshot, from the stack's state and its store. Call it right before the `up`. */
export async function snapshotEvidence(stack: Stack): Promise<EvidenceSnapshot> {
  // The time is taken after the listing: every record listed started before it, every later one at or after it.
  const records = await recordPaths(stack.name);
  return { stack: stack.name, records, owners: await owners(stack), takenAt: Date.now() };
}

/**
 * The resources that wrote a record since the snapshot, sorted by name, taken from the records' own start
 * times. A record of a kind and subject no resource held names itself (`<kind> <subject>`) instead, so an
 * assertion shows it. Throws when the store and the timestamps disagree: a record file that is new but
 * started before the snapshot, or one that was there before and claims to have started after it.
 */
export async function remeasuredSince(snapshot: EvidenceSnapshot): Promise<string[]> {
  const names = new Set<string>();
  for (const relativePath of await recordPaths(snapshot.stack)) {
    const record = readRecord(snapshot.stack, relativePath);
    const started = Date.parse(record.startedAt);
    const isNew = !snapshot.records.has(relativePath);
    if (isNew !== started >= snapshot.takenAt) {
      throw new Error(`evidence ${relativePath} (${subjectKey(record)}) started ${record.startedAt}, ${isNew ? "before" : "after"} the snapshot at ${new Date(snapshot.takenAt).toISOString()}, yet it was ${isNew ? "not " : ""}in the store then`);
    }
    if (isNew) names.add(snapshot.owners.get(subjectKey(record)) ?? subjectKey(record));
  }
  return [...names].sort();
}

/**
 * What the preview says `up` will measure again: each resource it replaces that holds a record of its own.
 * Replacing one without a record (a process, a command, a store document) measures nothing.
 */
export function plannedRemeasure(steps: ReadonlyMap<string, PlannedStep>, snapshot: EvidenceSnapshot): string[] {
  const holders = new Set(snapshot.owners.values());
  return [...steps.values()].filter((s) => s.op === "replace" && holders.has(s.name)).map((s) => s.name).sort();
}

/**
 * For a change whose host facts the preview cannot know before the host is discovered again: `up --refresh`
 * re-measures `includes` and only what the preview planned (it may plan more, never less), nothing that
 * matches `untouched`; the preview after it is empty.
 */
export async function expectUpWithinPreview(stack: Stack, steps: ReadonlyMap<string, PlannedStep>, opts: { includes: string; untouched: RegExp }): Promise<string[]> {
  const snapshot = await snapshotEvidence(stack);
  await stack.up({ refresh: true, onOutput: () => undefined });
  const remeasured = await remeasuredSince(snapshot);
  expect(remeasured).to.include(opts.includes);
  expect([...steps.keys()], "resources the preview planned to change").to.include.members(remeasured);
  for (const name of remeasured) expect(name).to.not.match(opts.untouched);
  await expectNothingPlanned(stack, { refresh: true });
  return remeasured;
}

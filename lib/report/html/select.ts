/**
 * Which stored record the report shows for each kind and subject. The store keeps every measurement
 * ever taken; the stack's outputs point at the ones its resources hold now. Without them (offline, or a
 * stack that is gone) the newest record of each kind and subject stands in, and the page says so.
 */
import type { StoredRecord } from "./types";

export interface Chosen {
  readonly stored: StoredRecord;
  readonly chosenBy: "stack" | "newest";
}

/** `kind` → subject alias → the record shown. */
export type Selection = ReadonlyMap<string, ReadonlyMap<string, Chosen>>;

const newer = (a: StoredRecord, b: StoredRecord): boolean => {
  const ka = [a.record.endedAt, a.record.startedAt, a.relativePath];
  const kb = [b.record.endedAt, b.record.startedAt, b.relativePath];
  for (let i = 0; i < ka.length; i++) if (ka[i] !== kb[i]) return ka[i] > kb[i];
  return false;
};

/**
 * Picks one record per kind and subject. With `pointers` (relative path → digest, from the stack's
 * outputs): a pointed record wins; a kind the stack points into shows only its pointed subjects (others
 * belong to resources the stack no longer has); a kind it does not point into shows the newest.
 */
export function selectRecords(records: readonly StoredRecord[], pointers?: ReadonlyMap<string, string>): Selection {
  const pointed = (s: StoredRecord) => pointers?.get(s.relativePath) === s.digest;
  const pointedKinds = new Set(records.filter(pointed).map((s) => s.record.kind));
  const out = new Map<string, Map<string, Chosen>>();
  for (const s of records) {
    const kind = s.record.kind;
    const byStack = pointed(s);
    if (pointedKinds.has(kind) && !byStack) continue;
    const bySubject = out.get(kind) ?? new Map<string, Chosen>();
    out.set(kind, bySubject);
    const alias = s.record.subject.alias;
    const held = bySubject.get(alias);
    if (!held || newer(s, held.stored)) bySubject.set(alias, { stored: s, chosenBy: byStack ? "stack" : "newest" });
  }
  return out;
}

/**
 * Every `{relativePath, digest}` object anywhere in a stack's outputs: the evidence its resources hold
 * (each engine's, the preflight's, and each trial point's `capacity.points.<id>.evidence`).
 */
export function evidencePointers(outputs: unknown): Map<string, string> {
  const found = new Map<string, string>();
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) return v.forEach(walk);
    if (!v || typeof v !== "object") return;
    const o = v as Record<string, unknown>;
    if (typeof o.relativePath === "string" && typeof o.digest === "string") found.set(o.relativePath, o.digest);
    Object.values(o).forEach(walk);
  };
  walk(outputs);
  return found;
}

/**
 * The generation each engine of the stack runs (`engines.<id>.generationDigest` in its outputs). The
 * outputs name no generation record, so the record whose observed digest is that one is the held one.
 */
export function heldGenerations(outputs: unknown): Map<string, string> {
  const o = (outputs ?? {}) as Record<string, unknown>;
  const wrapped = o.engines as { value?: unknown } | undefined;
  const engines = (wrapped && typeof wrapped === "object" && "value" in wrapped ? wrapped.value : wrapped) as Record<string, { generationDigest?: unknown }> | undefined;
  const out = new Map<string, string>();
  for (const [id, e] of Object.entries(engines && typeof engines === "object" ? engines : {})) if (typeof e?.generationDigest === "string") out.set(id, e.generationDigest);
  return out;
}

/**
 * Moves one resource's evidence to the store its stack names now (`evidence.store` changed): every record
 * and artifact its outputs point at is read from the store it was written to, checked against its digest,
 * and written to the new one under the same path. Nothing is measured again; evidence that no longer
 * holds is not carried over, and the next refresh reports it as it would have in the old store.
 */
import { parseStoredPath } from "./paths";
import type { EvidenceStore } from "./store";

export interface EvidenceRef {
  readonly relativePath: string;
  readonly digest: string;
}

/** Every `{relativePath, digest}` or `{relativePath, sha256}` in `value` that names a file the store writes. */
export function evidenceRefsIn(value: unknown, out: Map<string, EvidenceRef> = new Map()): EvidenceRef[] {
  if (Array.isArray(value)) {
    for (const v of value) evidenceRefsIn(v, out);
  } else if (value && typeof value === "object") {
    const o = value as Record<string, unknown>;
    const digest = typeof o.digest === "string" ? o.digest : o.sha256;
    if (typeof o.relativePath === "string" && typeof digest === "string" && parseStoredPath(o.relativePath)) out.set(o.relativePath, { relativePath: o.relativePath, digest });
    for (const v of Object.values(o)) evidenceRefsIn(v, out);
  }
  return [...out.values()];
}

/**
 * Copies `refs`, and the artifacts each record lists, from `from` to `to`. Returns the paths it could not
 * carry (gone or altered in `from`), which stay as invalid in `to` as they were.
 */
export async function moveEvidence(from: EvidenceStore, to: EvidenceStore, refs: readonly EvidenceRef[]): Promise<string[]> {
  const left: string[] = [];
  const queue = [...refs];
  const seen = new Set<string>();
  for (let ref = queue.shift(); ref; ref = queue.shift()) {
    if (seen.has(ref.relativePath)) continue;
    seen.add(ref.relativePath);
    const record = parseStoredPath(ref.relativePath)?.type === "record";
    if (!(await from.verify(ref.relativePath, ref.digest)).valid) {
      left.push(ref.relativePath);
      continue;
    }
    if (record) queue.push(...(await from.read(ref.relativePath, ref.digest)).artifacts.map((a) => ({ relativePath: a.relativePath, digest: a.sha256 })));
    await to.adopt(ref.relativePath, await from.readBytes(ref.relativePath, ref.digest));
  }
  return left;
}

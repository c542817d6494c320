/**
 * Replica comparison for Gate A: every engine host must hold the same snapshot, compared by path, byte
 * count and SHA-256, and discovery stops at the first difference, naming the path and both hosts.
 */
import { CheckpointManifest, comparePaths, ManifestEntry } from "./manifest";

/** What replicas are compared on: each retained file's path, byte count and SHA-256. */
export type ManifestIdentity = { readonly files: ReadonlyArray<Pick<ManifestEntry, "path" | "size" | "sha256">> };

export interface ReplicaManifest {
  host: string;
  manifest: ManifestIdentity;
}

/** The identity part of a manifest: no fingerprints or scan times, which change without the bytes. */
export function manifestIdentity(m: CheckpointManifest): ManifestIdentity & { modelTreeSha256: string } {
  return { modelTreeSha256: m.modelTreeSha256, files: m.files.map(({ path, size, sha256 }) => ({ path, size, sha256 })) };
}

export interface ReplicaDifference {
  /** The first differing path in `comparePaths` order over all replicas. */
  path: string;
  /** [reference host (the first one given), host that differs from it]. */
  hosts: [string, string];
  detail: string;
}

/** First difference between two sorted file lists, or null when they list the same files and bytes. */
function firstDifference(a: string, fa: ManifestIdentity["files"], b: string, fb: ManifestIdentity["files"]): ReplicaDifference | null {
  let i = 0;
  let j = 0;
  while (i < fa.length || j < fb.length) {
    const x = fa[i];
    const y = fb[j];
    const order = x === undefined ? 1 : y === undefined ? -1 : comparePaths(x.path, y.path);
    if (order < 0) return { path: x.path, hosts: [a, b], detail: `present on ${a} (${x.size} bytes), missing on ${b}` };
    if (order > 0) return { path: y.path, hosts: [a, b], detail: `missing on ${a}, present on ${b} (${y.size} bytes)` };
    if (x.size !== y.size) return { path: x.path, hosts: [a, b], detail: `${a} has ${x.size} bytes, ${b} has ${y.size} bytes` };
    if (x.sha256 !== y.sha256)
      return { path: x.path, hosts: [a, b], detail: `same size (${x.size} bytes) but sha256 ${x.sha256} on ${a}, ${y.sha256} on ${b}` };
    i++;
    j++;
  }
  return null;
}

/**
 * Compares every replica against the first one. Returns null when all hold the same files, or the
 * difference at the smallest path (ties go to the earlier host in `replicas`). Entries are re-sorted,
 * so the result does not depend on how a caller ordered them.
 */
export function compareReplicas(replicas: ReadonlyArray<ReplicaManifest>): ReplicaDifference | null {
  if (replicas.length < 2) return null;
  const sorted = (m: ManifestIdentity) => [...m.files].sort((p, q) => comparePaths(p.path, q.path));
  const ref = replicas[0];
  const refFiles = sorted(ref.manifest);
  let first: ReplicaDifference | null = null;
  for (const other of replicas.slice(1)) {
    const d = firstDifference(ref.host, refFiles, other.host, sorted(other.manifest));
    if (d && (!first || comparePaths(d.path, first.path) < 0)) first = d;
  }
  return first;
}

/** The error discovery raises for a difference; names the path and both hosts, and says what to do. */
export function replicaDifferenceMessage(d: ReplicaDifference): string {
  return (
    `checkpoint differs between hosts ${d.hosts[0]} and ${d.hosts[1]} at ${d.path}: ${d.detail}; ` +
    `stage the same snapshot on every engine host before discovery continues`
  );
}

/** One line naming every problem in a host's checkpoint directory, or null when there is none. */
export function checkpointProblemsMessage(host: string, manifest: CheckpointManifest): string | null {
  if (manifest.problems.length === 0) return null;
  const items = manifest.problems.map((p) => `${p.path} (${p.kind.replace(/_/g, " ")}: ${p.detail})`).join("; ");
  return `host ${host}: checkpoint ${manifest.root} is not a self-contained snapshot: ${items}; stage every file as a regular file inside the directory`;
}

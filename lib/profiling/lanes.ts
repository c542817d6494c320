/**
 * Which engines may be profiled at the same time: engines on different hosts, or on the same host with
 * disjoint GPUs, run concurrently; engines that share a GPU (an overlapping visibility list, or one that
 * sees every GPU) take turns, in fleet order, like narwhal-profile's per-device lanes.
 */
export interface PlacedEngine {
  id: string;
  host: string;
  /** GPU indices the engine sees; empty means every GPU of its host. */
  gpuIds: readonly number[];
}

const overlaps = (a: PlacedEngine, b: PlacedEngine) =>
  a.host === b.host && (a.gpuIds.length === 0 || b.gpuIds.length === 0 || a.gpuIds.some((g) => b.gpuIds.includes(g)));

/** Groups of engines sharing a GPU group (transitively), each in fleet order; groups in order of first engine. */
export function profileLanes(engines: readonly PlacedEngine[]): string[][] {
  const parent = engines.map((_, i) => i);
  const find = (i: number): number => (parent[i] === i ? i : (parent[i] = find(parent[i])));
  engines.forEach((a, i) => engines.forEach((b, j) => j > i && overlaps(a, b) && (parent[find(j)] = find(i))));
  const lanes = new Map<number, string[]>();
  engines.forEach((e, i) => lanes.set(find(i), [...(lanes.get(find(i)) ?? []), e.id]));
  return [...lanes.values()];
}

/** For each engine, the engine profiled just before it in its lane (its turn comes after that one). */
export function previousInLane(engines: readonly PlacedEngine[]): Map<string, string | undefined> {
  const out = new Map<string, string | undefined>();
  for (const lane of profileLanes(engines)) lane.forEach((id, i) => out.set(id, i ? lane[i - 1] : undefined));
  return out;
}

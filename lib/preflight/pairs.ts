/**
 * Which directed KV transfers preflight probes: narwhal's `validation_pairs`. Role pins forbid some
 * directions (a pinned decode engine never produces, a pinned prefill engine never consumes); the
 * full mesh probes every other ordered pair, the ring covers each eligible producer and consumer once.
 */
export interface PairEngine {
  readonly id: string;
  readonly role: "prefill" | "decode";
  readonly pin?: boolean;
}

export type PairMode = "mesh" | "ring";

export interface Pair {
  readonly producer: string;
  readonly consumer: string;
}

export const canProduce = (e: PairEngine): boolean => !(e.pin && e.role === "decode");
export const canConsume = (e: PairEngine): boolean => !(e.pin && e.role === "prefill");

export function pairsOf(producers: readonly string[], consumers: readonly string[], mode: PairMode): Pair[] {
  if (mode === "mesh") return producers.flatMap((p) => consumers.filter((c) => c !== p).map((c) => ({ producer: p, consumer: c })));
  const pairs: Pair[] = [];
  let cursor = 0;
  for (const producer of producers) {
    for (let offset = 0; offset < consumers.length; offset++) {
      const index = (cursor + offset) % consumers.length;
      const consumer = consumers[index];
      if (producer !== consumer) {
        pairs.push({ producer, consumer });
        cursor = index + 1;
        break;
      }
    }
  }
  const covered = new Set(pairs.map((p) => p.consumer));
  for (const consumer of consumers) {
    if (covered.has(consumer)) continue;
    const peer = producers.find((p) => p !== consumer);
    if (peer !== undefined) pairs.push({ producer: peer, consumer });
  }
  return pairs;
}

export function validationPairs(engines: readonly PairEngine[], mode: PairMode): Pair[] {
  return pairsOf(engines.filter(canProduce).map((e) => e.id), engines.filter(canConsume).map((e) => e.id), mode);
}

/** One probe of a pair; `repeat` counts from 0, and every repeat keeps its own verdict. */
export interface Probe extends Pair {
  readonly repeat: number;
}

export function withRepeats(pairs: readonly Pair[], repeats: number): Probe[] {
  if (!Number.isInteger(repeats) || repeats < 1) throw new Error(`preflight repeats: expected an integer of at least 1, got ${repeats}`);
  return pairs.flatMap((p) => Array.from({ length: repeats }, (_, repeat) => ({ ...p, repeat })));
}

/**
 * Which engines share NIXL handshake state. Two engines are KV peers when one may hand KV to the other
 * (role pins decide, as for preflight's pairs). After any engine restarts, the peers that read from it keep
 * the old process's NIXL state, which crashes them at a later handshake below NIXL 1.5.0 (vLLM #49238),
 * and restarting them leaves their own peers exposed in turn, so the unit that must restart together is a
 * connected component of the peer graph, not the direct peers.
 */
import { canConsume, canProduce, type PairEngine } from "../preflight/pairs";

export function areKvPeers(a: PairEngine, b: PairEngine): boolean {
  return a.id !== b.id && ((canProduce(a) && canConsume(b)) || (canProduce(b) && canConsume(a)));
}

/** The peer graph's connected components of two or more engines, each in config order. */
export function kvComponents(engines: readonly PairEngine[]): string[][] {
  const component = new Map<string, number>();
  const components: string[][] = [];
  for (const start of engines) {
    if (component.has(start.id)) continue;
    const members: string[] = [];
    const queue = [start];
    component.set(start.id, components.length);
    while (queue.length) {
      const e = queue.shift()!;
      members.push(e.id);
      for (const other of engines) {
        if (!component.has(other.id) && areKvPeers(e, other)) {
          component.set(other.id, components.length);
          queue.push(other);
        }
      }
    }
    const order = new Map(engines.map((e, i) => [e.id, i]));
    components.push(members.sort((a, b) => order.get(a)! - order.get(b)!));
  }
  return components.filter((c) => c.length >= 2);
}

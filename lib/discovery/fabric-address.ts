/** Global-scope addresses from `ip -o addr show dev <iface> scope global`. */
export function parseGlobalAddresses(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/\binet6?\s+([0-9a-fA-F.:]+)\/\d+/g)) out.push(m[1]);
  return out;
}

/**
 * The runbook derives engine and side-channel endpoints from the unique global address on the fabric
 * interface; several need an explicit per-host choice and none is an error.
 */
export function chooseFabricAddress(alias: string, iface: string, addresses: string[], explicit?: string): string {
  if (explicit) {
    if (!addresses.includes(explicit)) {
      throw new Error(`host ${alias}: hosts[].fabricAddress ${explicit} is not a global address on ${iface} (found: ${addresses.join(", ") || "none"})`);
    }
    return explicit;
  }
  if (addresses.length === 0) {
    throw new Error(`host ${alias}: fabric interface ${iface} has no global address; check hosts[].fabricInterface or bring the interface up`);
  }
  if (addresses.length > 1) {
    throw new Error(`host ${alias}: fabric interface ${iface} has several global addresses (${addresses.join(", ")}); choose one with hosts[].fabricAddress`);
  }
  return addresses[0];
}

/**
 * The fabric address a re-observation records: while the recorded address is still on the interface it
 * stands, even beside a new one; otherwise the fabric facet moves, so the preview shows the replacement
 * and the fresh discovery reports what to choose.
 */
export function keptFabricAddress(recorded: string, addresses: ReadonlyArray<string>): string {
  return addresses.includes(recorded) ? recorded : `unresolved: ${addresses.join(", ") || "no global address"}`;
}

/**
 * The fabric address discovery records for a host, given the one an earlier discovery of the stack
 * recorded (none on a first discovery): the one rule both the up (lib/discovery/observe.ts) and the
 * preview's forecast (lib/adoption/preview-reads.ts) apply, so their plans name the same address.
 */
export function discoveredFabricAddress(alias: string, iface: string, addresses: string[], explicit: string | undefined, recorded: string | undefined): string {
  return recorded === undefined ? chooseFabricAddress(alias, iface, addresses, explicit) : keptFabricAddress(recorded, addresses);
}

import type { AcceleratorInventory } from "../../lib/discovery/accelerators";

/** What discovery is measured against, plus how to log in (plain: these exist only inside provider calls). */
export interface HostDiscoveryInputs {
  alias: string;
  host: string;
  port: number;
  user: string;
  privateKey?: string;
  password?: string;
  /** Pinned in config; when absent the key seen at first contact is recorded. */
  pinnedHostKey?: string;
  /** The key recorded at first contact, checked again on refresh. */
  recordedHostKey?: string;
  allowFirstContact: boolean;
  connectTimeoutS: number;
  fabricInterface: string;
  /** The operator's choice when the interface has several global addresses. */
  fabricAddressChoice?: string;
}

export interface HostDiscoveryFacts {
  hostname: string;
  /** The verified host key line, pinned from here on by everything that logs in to this host. */
  hostKey: string;
  hostKeyFingerprint: string;
  accelerators: AcceleratorInventory;
  fabricAddress: string;
}

export type HostDiscoveryOutputs = HostDiscoveryInputs &
  HostDiscoveryFacts & {
    /** sha256 over the facts: what later evidence records as "measured against this host". */
    factsDigest: string;
    observedAt: string;
  };

import type { ProfileRow } from "../../lib/profiling";
import type { StoredLogin } from "../../lib/ssh/stored-login";

/** One engine's measured profile, as its Profile resource recorded it. */
export interface StoredProfile {
  engineId: string;
  row: ProfileRow;
  profileDigest: string;
  /** The evidence artifact holding the engine's sidecar entry. */
  samples: { relativePath: string; sha256: string };
}

export interface ProfileStoreInputs {
  stack: string;
  /** Absolute path of the store on the router host (the fleet document's `profiles.path` under the router's folder). */
  path: string;
  /** Every fleet engine: profile ids must equal them exactly. */
  engineIds: string[];
  model: string;
  /** The fleet's requested sweep, recorded in the sidecar as narwhal-profile records its options. */
  sweep: Record<string, unknown>;
  profiles: StoredProfile[];
  /** Where the router host is; absent = this machine's disk. */
  router?: StoredLogin;
  routerPrivateKey?: string;
  routerPassword?: string;
}

export interface ProfileStoreOutputs extends ProfileStoreInputs {
  /** `sha256:` of the store's bytes as written. */
  storeDigest: string;
  samplesPath: string;
  samplesDigest: string;
  count: number;
  writtenAt: string;
}

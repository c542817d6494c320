/** Checkpoint identity for Gate A: manifest, replica comparison, and hashing on the host (or locally). */
export * from "./manifest";
export * from "./compare";
export * from "./errors";
export { hashCheckpoint, DEFAULT_RACY_WINDOW_MS, TRANSPORT_GRACE_S } from "./driver";
export type { HashOptions, HashResult, HashStats, ScriptRun, ScriptRunner } from "./driver";
export { hashCheckpointRemote } from "./remote-hash";
export { hashCheckpointLocal } from "./local-hash";
export type { LocalHashOptions } from "./local-hash";
export { HASH_SCRIPT } from "./hash-script";

/** Loaded by path from every provider shim in state (shim.ts, `create`): the bookkeeping lives in lib/. */
export { createKeepingEvidence, keptAside, pendingRoot, type KeptAside } from "../lib/evidence/pending";

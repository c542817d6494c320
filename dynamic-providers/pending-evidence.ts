/** Kept for the provider shims already in stack states, which load this path (`create`); new code loads lib/. */
export { createKeepingEvidence, keptAside, pendingRoot, type KeptAside } from "../lib/evidence/pending";

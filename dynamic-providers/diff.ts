/** The diff rules every provider shares; they live in lib/ and are named here for the providers. */
export { hasUnknown } from "../lib/unknown";
export { diffInputs, heldWhileStartStands } from "../lib/evidence/diff";

/** The store every evidence provider writes to; it lives in lib/ and is named here for the providers. */
export { providerEvidence, type EvidenceRef, type ProviderEvidence } from "../lib/evidence/provider-evidence";

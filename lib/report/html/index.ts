/** The evidence report (`npm run report`): a static HTML page drawn from a stack's evidence store. */
export { collectReport, SAMPLES_ARTIFACT, type CollectOptions } from "./collect";
export { evidencePointers, heldGenerations, selectRecords } from "./select";
export { renderReport, CONTENT_SECURITY_POLICY } from "./page";
export { esc } from "./escape";
export type { ReportData, ProfileView, FabricView, PreflightView, IdentityRow, HeatCell } from "./types";

/** Gate F's profiling (narwhal-profile's contract) as pure logic: sweep, limits, fits, store, driver. */
export { ProfileError, type ProfileErrorCode } from "./errors";
export { DEFAULT_SWEEP, PREFILL_OUTPUT_TOKENS, boundedSweep, sweepProblems, sweepRecord, validateSweep, type Sweep } from "./sweep";
export { limitsDocument, maxNumSeqsOf, type LimitsDocument } from "./limits";
export * from "./fit";
export * from "./store";
export { Cohort, CohortStream, overlappingTokens, type Interval } from "./cohort";
export { SseSplitter, type SseEvent } from "./sse";
export type { EngineClient, Reply, StreamChunk } from "./client";
export { metricFacts, type EngineMetricFacts } from "./metrics";
export { emptyRecord, Profiler, type MeasureOptions, type MeasureRecord, type Measurement } from "./measure";
export { previousInLane, profileLanes, type PlacedEngine } from "./lanes";
export { publishStore, STORE_FILE_MODE, STORE_FOLDER_MODE, type EntryKind, type FileTarget, type Published } from "./publish";
export { localTarget } from "./local-target";
export { adoptionFor, type AdoptSource, type Adopted, type Adoption } from "./adopt";

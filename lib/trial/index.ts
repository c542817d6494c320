/**
 * Gate G's capacity trial: the shapes, the arrival schedule, prompts, the load client and its summary,
 * the prediction from the profile fits and the range it covers, the run with its reconciliation of
 * counters, and the verdict.
 */
export * from "./types";
export { arrivalSchedule, checkPoint, HIGHEST_TEST_RATE } from "./schedule";
export { pointProblems } from "./point";
export { promptIds, PROMPT_ID_FLOOR } from "./prompt";
export { mulberry32, hash32, mix32 } from "./random";
export { StreamRecorder } from "./stream-record";
export { runPoint, POINT_BOUND_MARGIN_S, EVENT_LOOP_RESOLUTION_MS, type RunPointOptions } from "./client";
export { summarise, percentile, completionTokens, tpotS, maxConcurrent, achievedSendRate } from "./summary";
export { decodeRequestLimit, departure, pointRange, predictedCurve, predictPoint, profiledRange, rangeProblems, throughRouter, TrialPredictError, type PredictEngine } from "./predict";
export { countersFromPrometheus, engineCounters, routerCounters, TRIAL_QUERIES, type QueryReply, type TrialQuery, type VectorSample } from "./counters";
export { DEFAULT_TOLERANCE, reconcile, type ReconcileInput } from "./reconcile";
export { judgePoint } from "./verdict";
export { runTrial, TRIAL_VOCABULARY, type EdgeSnapshot, type HostProbes, type TrialOptions, type TrialOutcome, type TrialRoutes } from "./run";
export { fetchGet, type HttpGet, type HttpReply } from "./http";
export { capacityPoint, type CapacityPoint } from "./capacity";
export { listenerProblem, listenerScript, SOCKETS_SCRIPT, trialArtifacts, trialRecordInputs, trialVerdict, type TrialBinding } from "./record";

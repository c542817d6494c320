/** Gate G's capacity trial: the shapes, the arrival schedule, prompts, the load client and its summary. */
export * from "./types";
export { arrivalSchedule, checkPoint, HIGHEST_TEST_RATE } from "./schedule";
export { promptIds, PROMPT_ID_FLOOR } from "./prompt";
export { mulberry32, hash32, mix32 } from "./random";
export { StreamRecorder } from "./stream-record";
export { runPoint, POINT_BOUND_MARGIN_S, EVENT_LOOP_RESOLUTION_MS, type RunPointOptions } from "./client";
export { summarise, percentile, completionTokens, tpotS, maxConcurrent, achievedSendRate } from "./summary";

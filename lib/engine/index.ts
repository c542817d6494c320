/** Gate C's pure logic: live-process proof, `/metrics` parsing, generation digest, cache layout from the engine's log, config.json and /metrics; the headers of every engine request. */
export * from "./errors";
export * from "./prometheus";
export * from "./generation";
export * from "./cache-layout";
export * from "./layout-sources";
export * from "./startup-log";
export * from "./model-kv";
export * from "./gone";
export * from "./request";

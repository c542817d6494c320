/** Gate C's cache-equivalence groups and Gate D's budget groups (pure). */
export * from "./errors";
export * from "./groups";
export { pythonJsonDumps } from "./python-json";

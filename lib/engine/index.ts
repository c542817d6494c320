/** Gate C's pure logic: live-process proof, `/metrics` parsing, generation digest, cache layout. */
export * from "./errors";
export * from "./prometheus";
export * from "./generation";
export * from "./cache-layout";
export * from "./layout-sources";

/** Gate D's pure logic: budget and verdict, directed edges, link fingerprints, tool argv and parsers. */
export * from "./errors";
export * from "./budget";
export * from "./edges";
export * from "./fingerprint";
export * from "./ib-write-bw";
export * from "./iperf3";

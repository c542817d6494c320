/** Gate D's pure logic: budget and verdict, directed edges and the mesh, link fingerprints and path observation, RDMA ends and counters, tool argv, scripts and parsers, the edge matrix and gate. */
export * from "./errors";
export * from "./budget";
export * from "./edges";
export * from "./fingerprint";
export * from "./ib-write-bw";
export * from "./iperf3";
export * from "./iperf3-remote";
export * from "./matrix";
export * from "./mesh";
export * from "./path";
export * from "./rdma-edge";

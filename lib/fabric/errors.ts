/**
 * The one error Gate D's pure logic throws; `code` says which check failed.
 *
 * - `NARWHAL_FABRIC_BUDGET_INPUT`: a budget input (`fabric.promptTokens`, …) is out of range.
 * - `NARWHAL_FABRIC_BUDGET_LAYOUT`: the captured layout cannot give a payload (no ranks, a rank without
 *   bytes per token, or a total that is not the sum of its ranks).
 * - `NARWHAL_FABRIC_EDGE_ENGINES`: the engine list cannot give fabric edges (duplicate id, no host, bad role).
 * - `NARWHAL_FABRIC_FINGERPRINT`: a link fingerprint input is missing or malformed.
 * - `NARWHAL_FABRIC_TOOL_SETTINGS`: an ib_write_bw or iperf3 setting is out of range.
 * - `NARWHAL_FABRIC_TOOL_OUTPUT`: recorded tool output is not the shape the parser knows.
 * - `NARWHAL_FABRIC_TOOL_FAILED`: the tool reported its own failure (iperf3's `error`).
 * - `NARWHAL_FABRIC_PATH`: a host's side of an edge cannot be observed (address gone, no route, no MTU).
 * - `NARWHAL_FABRIC_TOOL_MISSING`: a host has no iperf3 or ib_write_bw, or has one its login cannot execute.
 * - `NARWHAL_FABRIC_BUSY`: another measurement, listener or iperf3 holds what an edge needs.
 * - `NARWHAL_FABRIC_RDMA`: an RDMA edge, which needs the HCAs to be measured.
 * - `NARWHAL_FABRIC_GATE`: an edge is below its budget or its measurement is invalid.
 */
export type FabricErrorCode =
  | "NARWHAL_FABRIC_BUDGET_INPUT"
  | "NARWHAL_FABRIC_BUDGET_LAYOUT"
  | "NARWHAL_FABRIC_EDGE_ENGINES"
  | "NARWHAL_FABRIC_FINGERPRINT"
  | "NARWHAL_FABRIC_TOOL_SETTINGS"
  | "NARWHAL_FABRIC_TOOL_OUTPUT"
  | "NARWHAL_FABRIC_TOOL_FAILED"
  | "NARWHAL_FABRIC_PATH"
  | "NARWHAL_FABRIC_TOOL_MISSING"
  | "NARWHAL_FABRIC_BUSY"
  | "NARWHAL_FABRIC_RDMA"
  | "NARWHAL_FABRIC_GATE";

/** Callers and tests match on `code`, not `instanceof` (each serialized provider carries its own lib/). */
export class FabricError extends Error {
  constructor(
    readonly code: FabricErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "FabricError";
  }
}

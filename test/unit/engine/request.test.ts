/** The headers every engine client sends: the API key only when set, the JSON type only with a body. */
import { expect } from "chai";
import { engineHeaders, MEASURE_ACCEPT, PROBE_ACCEPT } from "../../../lib/engine/request";

describe("engine request headers", () => {
  it("sends the API key as Bearer and a JSON content type with a body", () => {
    expect(engineHeaders("k-123", true)).to.deep.equal({ accept: "application/json, text/event-stream, */*", authorization: "Bearer k-123", "content-type": "application/json" });
  });

  it("sends neither without a key or a body", () => {
    expect(engineHeaders(undefined, false)).to.deep.equal({ accept: MEASURE_ACCEPT });
    expect(engineHeaders("", false)).to.deep.equal({ accept: MEASURE_ACCEPT });
  });

  it("accepts text for Gate C's probes, whose /metrics is the text exposition", () => {
    expect(engineHeaders("k", false, PROBE_ACCEPT)).to.deep.equal({ accept: "application/json, text/plain, */*", authorization: "Bearer k" });
  });
});

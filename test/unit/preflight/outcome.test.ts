/** What the preflight provider makes of a run (lib/preflight/outcome.ts) and the typed input fields' words (lib/provider-fields.ts). */
import { expect } from "chai";
import { z } from "zod";
import { enginesNamed, handoffOf, preflightVerdict, streamError } from "../../../lib/preflight/outcome";
import type { GateResult } from "../../../lib/preflight/types";
import { digest, oneOf, seconds, text } from "../../../lib/provider-fields";

const gates: GateResult[] = [
  { gate: "reach", verdict: "fail", lines: [{ status: "fail", message: "e2: no answer" }] },
  { gate: "consume", verdict: "skip", lines: [{ status: "skip", message: "no pairs" }] },
] as never;

describe("preflight: a run's outcome", () => {
  it("fails a failed run on its failed lines, and a degraded one on its skips only with strict", () => {
    const skipped = [{ gate: "consume", message: "no pairs" }] as never;
    expect(preflightVerdict(gates, "fail", [], false)).to.deep.equal({ status: "fail", reasons: ["reach: e2: no answer"] });
    expect(preflightVerdict([gates[1]], "degraded", skipped, false)).to.deep.equal({ status: "pass", reasons: ["consume skipped: no pairs"] });
    expect(preflightVerdict([gates[1]], "degraded", skipped, true)).to.deep.equal({ status: "fail", reasons: ["consume skipped: no pairs"] });
  });

  it("names an engine only where its id stands as a word of its own", () => {
    expect(enginesNamed("e1 -> e12: no first token", ["e1", "e12", "e2"])).to.deep.equal(["e1", "e12"]);
    expect(enginesNamed("prefill.e1x failed", ["e1"])).to.deep.equal([]);
  });

  it("reads an SSE error and checks a handoff as narwhal does", () => {
    expect(streamError({ code: 503, message: " busy " })).to.equal("503 busy");
    expect(streamError({ code: 200, message: "odd" })).to.equal("500 odd");
    expect(streamError("boom")).to.equal("500 boom");
    expect(handoffOf(JSON.stringify({ choices: [{ kv_transfer_params: { remote_engine_id: "p", remote_block_ids: [1] } }] }))).to.deep.equal({ remote_engine_id: "p", remote_block_ids: [1] });
    expect(() => handoffOf(JSON.stringify({ choices: [{}] }))).to.throw("the prefill response carries no kv_transfer_params");
    expect(() => handoffOf(JSON.stringify({ kv_transfer_params: { remote_engine_id: "p" } }))).to.throw("handoff has no remote_block_ids");
  });
});

describe("typed provider fields: one message for a wrong type and a failed check", () => {
  const messages = (schema: z.ZodType, v: unknown) => schema.safeParse(v).error?.issues.map((i) => i.message) ?? [];
  it("words each refusal as input-rules does, naming the value given", () => {
    expect(messages(text("engineId"), "")).to.deep.equal(["engineId must be a non-empty string"]);
    expect(messages(text("engineId"), 3)).to.deep.equal(["engineId must be a non-empty string"]);
    expect(messages(digest("planSha256"), "abc")).to.deep.equal(['planSha256 must be sha256:<64 hex>, got "abc"']);
    expect(messages(seconds("probeTimeoutS"), 0)).to.deep.equal(["probeTimeoutS must be a positive number of seconds, got 0"]);
    expect(messages(seconds("probeTimeoutS"), "5")).to.deep.equal(['probeTimeoutS must be a positive number of seconds, got "5"']);
    expect(messages(oneOf("pairs", ["mesh", "ring"]), "star")).to.deep.equal(['pairs must be "mesh" or "ring", got "star"']);
  });
});

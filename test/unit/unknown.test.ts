/**
 * The one unknown-value sentinel every provider diff, the preview summary and the policy pack compare
 * against: it must be the very string the engine and the SDK hand a preview, or a preview's unknown
 * output would read as a real value.
 */
import { expect } from "chai";
import * as pulumiRpc from "@pulumi/pulumi/runtime/rpc";
import { UNKNOWN } from "../../lib/unknown";
import { UNKNOWN_VALUES } from "../../lib/policy/evidence-gates";

describe("lib/unknown: the preview's unknown-value sentinel", () => {
  it("is @pulumi/pulumi's unknown value, and one the policy pack knows", () => {
    expect(UNKNOWN).to.equal(pulumiRpc.unknownValue);
    expect(UNKNOWN_VALUES.has(UNKNOWN)).to.equal(true);
  });
});

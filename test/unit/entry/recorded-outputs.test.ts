import { expect } from "chai";
import { readOutputs } from "../../../entry/recorded-outputs";

describe("entry: the stack's last recorded outputs", () => {
  it("gives the outputs, and none for a stack that has no deployment yet", async () => {
    expect(await readOutputs("organization/p/s", async () => ({ outputs: { rollout: { status: "settled" } } }))).to.deep.equal({ rollout: { status: "settled" } });
    expect(await readOutputs("organization/p/s", async () => ({}))).to.deep.equal({});
  });

  it("stops with one message naming the stack when the backend does not answer, rather than read no record", async () => {
    const err = await readOutputs("organization/p/s", () => Promise.reject(new Error("blob (key \".pulumi/stacks/p/s.json\") (code=Unknown): connection refused"))).then(
      () => undefined,
      (e: Error & { code?: string }) => e,
    );
    expect(err?.code).to.equal("NARWHAL_RECORDED_OUTPUTS_UNREADABLE");
    expect(err?.message).to.match(/^reading the last outputs of stack organization\/p\/s failed: blob .* connection refused\. A rolling change continues from them, so nothing was touched; check that the state backend answers/);
  });
});

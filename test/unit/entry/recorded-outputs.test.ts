import { expect } from "chai";
import { READ_ATTEMPTS, readOutputs } from "../../../entry/recorded-outputs";

describe("entry: the stack's last recorded outputs", () => {
  it("gives the outputs, and none for a stack that has no deployment yet", async () => {
    expect(await readOutputs("organization/p/s", async () => ({ outputs: { rollout: { status: "settled" } } }))).to.deep.equal({ rollout: { status: "settled" } });
    expect(await readOutputs("organization/p/s", async () => ({}))).to.deep.equal({});
  });

  it("reads again when a read meets the CLI rewriting the checkpoint", async () => {
    let calls = 0;
    const racing = async () => (++calls < 3 ? Promise.reject(new Error("failed to load checkpoint: EOF")) : { outputs: { rollout: { status: "rolling" } } });
    expect(await readOutputs("organization/p/s", racing, 1)).to.deep.equal({ rollout: { status: "rolling" } });
    expect(calls).to.equal(3);
  });

  it("stops with one message naming the stack when the backend does not answer, rather than read no record", async () => {
    let calls = 0;
    const refused = () => (calls++, Promise.reject(new Error("blob (key \".pulumi/stacks/p/s.json\") (code=Unknown): connection refused")));
    const err = await readOutputs("organization/p/s", refused, 1).then(
      () => undefined,
      (e: Error & { code?: string }) => e,
    );
    expect(calls).to.equal(READ_ATTEMPTS);
    expect(err?.code).to.equal("NARWHAL_RECORDED_OUTPUTS_UNREADABLE");
    expect(err?.message).to.match(/^reading the last outputs of stack organization\/p\/s failed: blob .* connection refused\. A rolling change continues from them, so nothing was touched; check that the state backend answers/);
  });
});

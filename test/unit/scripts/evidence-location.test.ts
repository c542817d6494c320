import { expect } from "chai";
import type { Stack } from "@pulumi/pulumi/automation";
import { evidenceLocationOf } from "../../../scripts/stack/evidence";

/** A stack as the Automation API gives its config: `evidence` is an object, so its value is JSON text. */
const stackWith = (config: Record<string, { value: string; secret: boolean }>) =>
  ({ workspace: { projectSettings: async () => ({ name: "narwhal-fleet" }) }, getAllConfig: async () => config }) as unknown as Stack;

describe("scripts: the stack's evidence store", () => {
  it("is the bucket the stack's evidence.store names", async () => {
    const url = "s3://narwhal-team/evidence?endpoint=http://127.0.0.1:8333&region=us-east-1";
    const at = await evidenceLocationOf(stackWith({ "narwhal-fleet:evidence": { value: JSON.stringify({ store: url }), secret: false } }));
    expect(at).to.deep.equal({ type: "s3", bucket: "narwhal-team", prefix: "evidence", endpoint: "http://127.0.0.1:8333", region: "us-east-1" });
  });

  it("is the project's folder when the stack names none", async () => {
    expect(await evidenceLocationOf(stackWith({}))).to.deep.equal({ type: "folder" });
    expect(await evidenceLocationOf(stackWith({ "narwhal-fleet:evidence": { value: "{}", secret: false } }))).to.deep.equal({ type: "folder" });
  });

  it("refuses a location that is not one, naming it", async () => {
    const wrong = stackWith({ "narwhal-fleet:evidence": { value: JSON.stringify({ store: "ftp://x" }), secret: false } });
    const err = await evidenceLocationOf(wrong).then(() => undefined, (e: Error & { code?: string }) => e);
    expect(err?.code).to.equal("NARWHAL_EVIDENCE_LOCATION");
    expect(err?.message).to.contain('"ftp://x"');
  });
});

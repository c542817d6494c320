import { expect } from "chai";
import * as fs from "node:fs";
import { sharedFleet } from "./support/stack";
import { plannedChanges } from "./support/preview";
import { expectUpWithinPreview } from "./support/remeasured";

/** Evidence of e1 and e4, which run on the unchanged host. */
const OTHER_HOST_ENGINES = /^fleet-(attestation-|profiles-)?e[14]\b/;

describe("e2e: runtime evidence follows the host", function () {
  this.timeout(1_200_000);

  it("replaces the discovery of a host whose vLLM runtime changed, and what was proved against that host's engines", async () => {
    const { stack, hosts } = await sharedFleet();
    const [a, b] = hosts;
    const original = fs.readFileSync(b!.simConfigPath, "utf8");
    // An in-place upgrade of the host's vLLM: `vllm --version` and the engines' /version follow the config.
    fs.writeFileSync(b!.simConfigPath, JSON.stringify({ ...JSON.parse(original), version: "0.29.1" }, null, 2));
    try {
      const steps = await plannedChanges(stack, { refresh: true });
      expect(steps.get(`fleet-${b!.alias}`)).to.deep.include({ op: "replace", keys: ["runtime"] });
      expect(steps.has(`fleet-${a!.alias}`), "the unchanged host's discovery").to.equal(false);
      for (const name of steps.keys()) expect(name).to.not.match(OTHER_HOST_ENGINES);

      // up measures the host again and what its new runtime invalidates; the preview, which cannot know the
      // host's facts before the new discovery, may plan more than that, never less.
      await expectUpWithinPreview(stack, steps, { includes: `fleet-${b!.alias}`, untouched: OTHER_HOST_ENGINES });
    } finally {
      fs.writeFileSync(b!.simConfigPath, original);
    }
    // And back: the host's runtime as it was, measured again the same way.
    await expectUpWithinPreview(stack, await plannedChanges(stack, { refresh: true }), { includes: `fleet-${b!.alias}`, untouched: OTHER_HOST_ENGINES });
    expect([...(await plannedChanges(stack, { refresh: true })).keys()]).to.deep.equal([]);
  });
});

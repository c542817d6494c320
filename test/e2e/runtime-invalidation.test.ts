import { expect } from "chai";
import * as fs from "node:fs";
import { sharedFleet } from "./support/stack";
import { plannedChanges } from "./support/preview";

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
      for (const name of steps.keys()) expect(name).to.not.match(/^fleet-(attestation-|profiles-)?e[14]\b/); // e1 and e4 run on the unchanged host
    } finally {
      fs.writeFileSync(b!.simConfigPath, original);
    }
    expect([...(await plannedChanges(stack, { refresh: true })).keys()]).to.deep.equal([]);
  });
});

import { expect } from "chai";
import * as fs from "node:fs";
import { request } from "undici";
import { API_KEY, sharedFleet } from "./support/stack";
import { plannedChanges } from "./support/preview";
import { expectUpStopsAtStalePeers, restartFleetAndConverge } from "./support/relaunch";

/** e1 and e4 run on the unchanged host, e3 on the third. */
const OTHER_HOSTS_ENGINES = /^fleet-(attestation-|profiles-)?e[134]\b/;

async function servedVersion(url: string): Promise<string> {
  const r = await request(`${url}/version`, { headers: { authorization: `Bearer ${API_KEY}` } });
  return ((await r.body.json()) as { version: string }).version;
}

describe("e2e: runtime evidence follows the host", function () {
  this.timeout(1_200_000);

  it("restarts the engine of a host whose vLLM was upgraded in place, and re-measures only what was proved against it", async () => {
    const { stack, hosts } = await sharedFleet();
    const [a, b] = hosts;
    const url = ((await stack.outputs()).engines!.value as Record<string, { url: string }>).e2!.url;
    const original = fs.readFileSync(b!.simConfigPath, "utf8");
    const before = (JSON.parse(original) as { version: string }).version;
    expect(await servedVersion(url)).to.equal(before);
    // An in-place upgrade of the host's vLLM: `vllm --version` follows the config, and so does the /version
    // of an engine started after it. The running engine keeps serving the version it loaded.
    fs.writeFileSync(b!.simConfigPath, JSON.stringify({ ...JSON.parse(original), version: "0.29.1" }, null, 2));
    try {
      const steps = await plannedChanges(stack, { refresh: true });
      expect(steps.get(`fleet-${b!.alias}`)).to.deep.include({ op: "replace", keys: ["runtime"] });
      expect(steps.get("fleet-e2-process")?.op, "the engine still serving the old version").to.equal("replace");
      expect(steps.has(`fleet-${a!.alias}`), "the unchanged host's discovery").to.equal(false);
      for (const name of steps.keys()) expect(name).to.not.match(OTHER_HOSTS_ENGINES);

      await expectUpStopsAtStalePeers(stack, steps, "e2", { exact: false });
      expect(await servedVersion(url), "e2 restarted on the upgraded runtime").to.equal("0.29.1");
    } finally {
      fs.writeFileSync(b!.simConfigPath, original);
    }
    // The old version back is the same row again; then the runbook's wave brings the fleet back.
    const back = await plannedChanges(stack, { refresh: true });
    expect(back.get(`fleet-${b!.alias}`)).to.deep.include({ op: "replace", keys: ["runtime"] });
    await expectUpStopsAtStalePeers(stack, back, "e2", { exact: false });
    expect(await servedVersion(url)).to.equal(before);
    await restartFleetAndConverge(stack);
  });
});

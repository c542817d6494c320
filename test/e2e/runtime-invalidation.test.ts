import { expect } from "chai";
import * as fs from "node:fs";
import { request } from "undici";
import type { Stack } from "@pulumi/pulumi/automation";
import type { SimHost } from "../../sim/hosts";
import { API_KEY, sharedFleet } from "./support/stack";
import { plannedChanges } from "./support/preview";
import { expectUpWithinPreview, remeasuredSince, snapshotEvidence } from "./support/remeasured";
import { SHARED_ENGINES as ENGINES } from "./support/names";

async function servedVersions(urls: Record<string, { url: string }>): Promise<Record<string, string>> {
  const versions = await Promise.all(
    ENGINES.map(async (id) => ((await (await request(`${urls[id].url}/version`, { headers: { authorization: `Bearer ${API_KEY}` } })).body.json()) as { version: string }).version),
  );
  return Object.fromEntries(ENGINES.map((id, i) => [id, versions[i]]));
}

/** An in-place upgrade of a host's vLLM: `vllm --version` follows the config, and so does the /version of an engine started after it. */
function setVersion(host: SimHost, original: string, version: string): void {
  fs.writeFileSync(host.simConfigPath, JSON.stringify({ ...JSON.parse(original), version }, null, 2));
}

describe("e2e: runtime evidence follows the host", function () {
  this.timeout(1_200_000);

  it("restarts the engines of a host whose vLLM was upgraded in place; a mixed fleet stops at the engine contract, a whole one converges", async () => {
    const { stack, hosts } = await sharedFleet();
    const [a, b, c] = hosts as [SimHost, SimHost, SimHost];
    const urls = (await stack.outputs()).engines.value as Record<string, { url: string }>;
    const originals = new Map(hosts.map((h) => [h, fs.readFileSync(h.simConfigPath, "utf8")]));
    const before = (JSON.parse(originals.get(b)!) as { version: string }).version;
    expect(await servedVersions(urls)).to.deep.equal({ e1: before, e2: before, e3: before, e4: before });
    try {
      // One host first. The running engine keeps serving the version it loaded, so the program restarts it.
      setVersion(b, originals.get(b)!, "0.29.1");
      const steps = await plannedChanges(stack, { refresh: true });
      expect(steps.get(`fleet-${b.alias}`)).to.deep.include({ op: "replace", keys: ["runtime"] });
      expect(steps.get("fleet-e2-process")?.op, "the engine still serving the old version").to.equal("replace");
      expect(steps.has(`fleet-${a.alias}`) || steps.has(`fleet-${c.alias}`), "the unchanged hosts' discovery").to.equal(false);
      for (const name of steps.keys()) expect(name, "e1 and e4 run on sim1, e3 on sim4").to.not.match(/^fleet-(attestation-|profiles-)?e[134]\b/);

      // e2 is proved and attested on the new version, and the fleet's contract refuses to mix versions.
      let failure = "";
      const snapshot = await snapshotEvidence(stack);
      await stack.up({ refresh: true, onOutput: () => undefined }).catch((err: Error) => (failure = err.message));
      expect(failure, failure.slice(-3000)).to.contain(`- engine_version: "${before}" (e1, e3, e4) vs "0.29.1" (e2)`);
      const mixed = await remeasuredSince(snapshot);
      expect(mixed).to.include.members(["fleet-e2-generation", "fleet-attestation-e2"]);
      expect([...steps.keys()], "only resources the preview planned").to.include.members(mixed);
      expect(await servedVersions(urls)).to.deep.equal({ e1: before, e2: "0.29.1", e3: before, e4: before });

      // The rest of the fleet upgraded: every other engine restarts on it in one up. No process holds a
      // handshake of another's old process (e2 exchanged no KV since its restart), so the up converges.
      setVersion(a, originals.get(a)!, "0.29.1");
      setVersion(c, originals.get(c)!, "0.29.1");
      await expectRestartOn(stack, urls, "0.29.1", ["e1", "e3", "e4"]);
    } finally {
      for (const [h, text] of originals) fs.writeFileSync(h.simConfigPath, text);
    }
    // And the whole fleet back on the version it had.
    await expectRestartOn(stack, urls, before, ENGINES);
  });
});

/**
 * `up --refresh` restarts `restarted` on `version` and measures them again, within what the preview said
 * and no other engine's generation; then nothing is left to do and every engine serves `version`.
 */
async function expectRestartOn(stack: Stack, urls: Record<string, { url: string }>, version: string, restarted: string[]): Promise<void> {
  const others = ENGINES.filter((e) => !restarted.includes(e));
  const untouched = others.length ? new RegExp(`^fleet-(${others.join("|")})-generation$`) : /$^/;
  const remeasured = await expectUpWithinPreview(stack, await plannedChanges(stack, { refresh: true }), { includes: `fleet-${restarted[0]}-generation`, untouched });
  for (const id of restarted) expect(remeasured).to.include.members([`fleet-${id}-generation`, `fleet-attestation-${id}`, `fleet-profiles-${id}`]);
  expect(await servedVersions(urls)).to.deep.equal(Object.fromEntries(ENGINES.map((id) => [id, version])));
}

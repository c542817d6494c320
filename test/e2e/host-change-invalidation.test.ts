import { expect } from "chai";
import * as fs from "node:fs";
import * as path from "node:path";
import { runInHost } from "../../sim/hosts";
import { sharedFleet, getObjectConfig, setObjectConfig } from "./support/stack";
import { expectNothingPlanned, plannedChanges } from "./support/preview";
import { FLEET_AFTER_ENGINE_PATTERN } from "./support/names";
import { expectUpWithinPreview } from "./support/remeasured";
import { ENDPOINT_TIMEOUT_MS, preflightAfterStart, restartPeersThenUp } from "./support/relaunch";

/** Resources of the shared fleet that belong to other hosts' engines (e1, e4 on the first host, e2 on the second). */
const OTHER_ENGINES = /^fleet-(attestation-|profiles-)?e[124]\b/;

describe("e2e: hardware and fabric address changes on one host", function () {
  this.timeout(1_200_000);

  it("replaces the discovery of a host whose GPU was swapped, and nothing measured on other hosts", async () => {
    const { stack, hosts } = await sharedFleet();
    const [a, b, c] = hosts;
    const smi = path.join(c.dir, "bin", "nvidia-smi");
    const original = fs.readFileSync(smi, "utf8");
    const swapped = c.gpus[0].uuid.replace(/[0-9a-f]{12}$/, "0123456789ab");
    expect(original).to.include(c.gpus[0].uuid);
    fs.writeFileSync(smi, original.split(c.gpus[0].uuid).join(swapped));
    try {
      const steps = await plannedChanges(stack, { refresh: true });
      expect(steps.get(`fleet-${c.alias}`)).to.deep.include({ op: "replace", keys: ["accelerators"] });
      for (const name of steps.keys()) {
        expect(name, "the unchanged hosts' discovery").to.not.be.oneOf([`fleet-${a.alias}`, `fleet-${b.alias}`]);
        expect(name).to.not.match(OTHER_ENGINES);
      }
      // up measures the host again and what the new GPU invalidates, never what the preview did not plan.
      await expectUpWithinPreview(stack, steps, { includes: `fleet-${c.alias}`, untouched: OTHER_ENGINES });
    } finally {
      fs.writeFileSync(smi, original);
    }
    // And back to the GPU it had: the same host measured once more, and nothing left to do.
    await stack.up({ refresh: true, onOutput: () => undefined });
    await expectNothingPlanned(stack, { refresh: true });
  });

  it("keeps the measured fabric address beside a new one, relaunches that host's engine when the config picks the new one, and back", async () => {
    const { stack, hosts } = await sharedFleet();
    const [, , c] = hosts;
    const extra = "198.18.0.253";
    const hostsConfig = await getObjectConfig<Array<Record<string, unknown>>>(stack, "hosts");
    const choose = (address: string) =>
      setObjectConfig(stack, "hosts", hostsConfig.map((h) => (h.alias === c.alias ? { ...h, fabricAddress: address } : h)));
    await runInHost(c.alias, ["ip", "addr", "add", `${extra}/24`, "dev", c.fabricInterface]);
    try {
      // The engines still listen on the recorded address: a second one on the interface invalidates nothing.
      await expectNothingPlanned(stack, { refresh: true });

      await choose(c.address);
      await expectNothingPlanned(stack, { refresh: true }, "naming the address already measured");

      await choose(extra);
      const steps = await plannedChanges(stack, { refresh: true });
      expect(steps.get(`fleet-${c.alias}`)).to.deep.include({ op: "replace", keys: ["fabricAddressChoice"] });
      expect(steps.get("fleet-e3-process")?.op, "the engine on that host").to.equal("replace");
      // Beyond the host: its engine's evidence, the edges that touch it (the endpoints moved) and their gate,
      // what the fleet measured across the engine, and the scrape targets (its URL moved).
      for (const name of steps.keys()) {
        expect(name).to.match(new RegExp(`^fleet-(${c.alias}(-narwhal-venv)?|replicas|config|e3-.*|attestation-e3(-sidecar)?|profiles-e3|fabric-.*${c.alias}.*|fabric-gate|${FLEET_AFTER_ENGINE_PATTERN}|router-host-monitoring-targets)$`));
      }
      // The peers handshake with e3's new process (a new engine id, wherever it listens) before their UCX
      // endpoints to the old one fail (past that their handshakes would segfault them, vLLM #49238), so this
      // up converges: e3's evidence and the edges touching its host, nothing else.
      const upStarted = Date.now();
      const remeasured = await expectUpWithinPreview(stack, steps, { includes: "fleet-e3-generation", untouched: OTHER_ENGINES });
      const after = await preflightAfterStart(stack.name, upStarted, "e3");
      expect(after, `the preflight began ${after} ms after e3's new process started, past the peers' ${ENDPOINT_TIMEOUT_MS} ms endpoint timeout`).to.be.below(ENDPOINT_TIMEOUT_MS);
      expect(remeasured.filter((n) => n.startsWith("fleet-fabric-") && n !== "fleet-fabric-gate").sort(), "every edge touching the host, measured from the new address").to.deep.equal(
        ["sim1-to-sim4", "sim2-to-sim4", "sim4-to-sim1", "sim4-to-sim2"].map((e) => `fleet-fabric-${e}`),
      );

      // Back on the first address (named: with two on the interface, no choice keeps the one measured last),
      // e3 restarts once more while its peers hold the NIXL state of both earlier processes: they restart first.
      await choose(c.address);
      await restartPeersThenUp(stack, "e3", { exact: false });
    } finally {
      await setObjectConfig(stack, "hosts", hostsConfig);
      await runInHost(c.alias, ["ip", "addr", "del", `${extra}/24`, "dev", c.fabricInterface]);
    }
    await expectNothingPlanned(stack, { refresh: true });
  });
});

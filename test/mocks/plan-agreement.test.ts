/**
 * The preview's adoption forecast and the up cannot disagree about a plan: both go from what discovery
 * measured and the config to an engine's plan through one function (engineLaunchPlan). Here the up's
 * discoveries record what the host-discovery provider records from a probe's output (the accelerators,
 * the chosen fabric address, the model's requirements), and the preview reads the same output its own way
 * (lib/adoption/preview-reads.ts); every plan the up hands on equals the preview's, byte for byte.
 */
import { expect } from "chai";
import * as fs from "node:fs";
import * as path from "node:path";
import { parseFleetConfig } from "../../lib/config/parse";
import { parseProbe } from "../../lib/discovery/probe";
import { chooseFabricAddress } from "../../lib/discovery/fabric-address";
import { discoveredFromProbe, previewProbeOptions } from "../../lib/adoption/preview-reads";
import { engineLaunchPlan } from "../../lib/launch/policy";
import { launchRecord, type LaunchPlan } from "../../lib/launch/plan";
import { fleetConfig, fleetState, mockSecrets, settle, useFleetMocks } from "./support/fleet";

/** sim2's recorded probe: two NVIDIA GPUs, fab0 at 198.18.0.12, the tiny-llama checkpoint. */
const PROBE = fs.readFileSync(path.join(__dirname, "..", "unit", "discovery", "fixtures", "sim2-probe.txt"), "utf8");

/** What the host-discovery provider records from a first probe (dynamic-providers/host-discovery/provider.ts). */
function recorded(type: string, name: string, inputs: Record<string, any>): Record<string, unknown> {
  const state = fleetState(type, name, inputs);
  if (type !== "pulumi-nodejs:dynamic/narwhal:HostDiscovery") return state;
  const facts = parseProbe(PROBE, { alias: inputs.alias, fabricInterface: inputs.fabricInterface, fabricAddressChoice: inputs.fabricAddressChoice, modelDir: inputs.modelDir });
  return {
    ...state,
    accelerators: facts.accelerators,
    fabricAddress: chooseFabricAddress(inputs.alias, inputs.fabricInterface, [...facts.fabric.addresses], inputs.fabricAddressChoice),
    model: { ...(state.model as object), ...facts.model!.requirements },
  };
}

describe("mocks: one plan per engine, the preview's and the up's", () => {
  const mocks = useFleetMocks(recorded);
  const registered = mocks.registered;

  for (const [what, engines] of [
    ["engines naming their GPUs", undefined],
    ["an engine taking every GPU of its host, with its own TP size", [{ id: "e1", host: "a", overrides: { tensorParallelSize: 1 } }, { id: "e2", host: "b", gpuIds: [1] }]],
  ] as const) {
    it(`renders each plan once and hands it on unchanged, equal to the preview forecast's: ${what}`, async () => {
      const config = fleetConfig({ model: { servedName: "tiny", checkpointDir: "/models/tiny-llama" }, ...(engines ? { engines } : {}) });
      const spec = parseFleetConfig(config);
      const fleet = mocks.build(config, mockSecrets("mock-api-key-0123456789"));
      const preview = spec.engines.map((e) => {
        const host = spec.hosts.find((h) => h.alias === e.host)!;
        return engineLaunchPlan(spec, e, discoveredFromProbe(host, PROBE, previewProbeOptions(spec, host)));
      });
      const up: LaunchPlan[] = await Promise.all(fleet.discovery.plans.map(({ plan }) => settle(plan)));
      expect(up).to.deep.equal(preview);
      const engineSeen = await Promise.all(fleet.engineParts.map(({ engine }) => settle(engine.plan)));
      expect(engineSeen).to.deep.equal(preview);
      // Each check is read once it has registered (its URN resolves then), whatever order registrations take.
      await Promise.all([settle(fleet.deploymentConfig.configDigest), ...fleet.engineParts.map(({ engine }) => settle(engine.imageCheck.urn))]);
      for (const plan of preview) {
        const check = registered.find((r) => r.name === `fleet-${plan.engineId}-image-check`)!;
        expect(check.inputs.plan, plan.engineId).to.deep.equal(launchRecord(plan));
        expect(check.inputs.dsRequired, plan.engineId).to.equal(plan.dsRequired);
      }
      const replicas = registered.find((r) => r.name === "fleet-replicas")!;
      expect((replicas.inputs.engines as Array<{ tensorParallelSize: number }>).map((e) => e.tensorParallelSize)).to.deep.equal(preview.map((p) => p.tensorParallelSize));
    });
  }
});

/**
 * The profile mesh's wiring under mocks: one Profile per engine after its attestation, bound to that
 * engine's generation, attestation, plan limit and the fleet's sweep, measured through the router host,
 * and one store on the router host at profiles.path. No provider method runs here;
 * test/providers/profile.test.ts measures real simulated engines.
 */
import { expect } from "chai";
import * as pulumi from "@pulumi/pulumi";
import { parseFleetConfig } from "../../lib/config";
import { cacheLayoutDigest } from "../../lib/engine/cache-layout";
import type { AttestationDocument } from "../../lib/attestation";
import type { FleetSecrets } from "../../components/stack-config";
import { ranks } from "../unit/attestation/fixtures";

interface Registered {
  type: string;
  name: string;
  inputs: Record<string, unknown>;
}

const API_KEY = "mock-api-key-attest-0123";
const IMAGE_ID = "sha256:" + "1d".repeat(32);
const CONTAINER_ID = "c0".repeat(32);
const registered: Registered[] = [];

function reveal(value: unknown): unknown {
  const v = value as Record<string, unknown> | undefined;
  return v && v["4dabf18193072939515e22adb298388d"] === "1b47061264138c4ac30d75fd1eb44270" ? v.value : value;
}

/** The output's value, or its failure (an apply that throws rejects it). */
function settle<T>(o: pulumi.Output<T>): Promise<T> {
  return (o as unknown as { promise(): Promise<T> }).promise();
}

function state(type: string, name: string, inputs: Record<string, any>): Record<string, unknown> {
  switch (type) {
    case "pulumi-nodejs:dynamic/narwhal:HostDiscovery":
      return {
        ...inputs,
        hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMockKey",
        fabricAddress: `198.18.0.${inputs.alias === "a" ? 11 : 12}`,
        accelerators: { vendor: "nvidia", product: "NVIDIA H100 80GB HBM3", gpus: [{ index: 0 }, { index: 1 }] },
        model: { architecture: "LlamaForCausalLM", numHiddenLayers: 22, configSha256: "c0".repeat(32), dtype: "bfloat16", maxPositionEmbeddings: 32768, trustRemoteCode: false, ssmConvStateLayoutDS: false },
        runtime: { kind: "native", vllmVersion: "0.29.0", packages: { nixl: "0.7.1" } },
        checkpoint: { modelTreeSha256: "ab".repeat(32), files: [{ path: "config.json", size: 10, sha256: "cd".repeat(32) }] },
        factsDigest: "sha256:" + "fa".repeat(32),
      };
    case "command:remote:Command":
      return {
        ...inputs,
        stdout: name.endsWith("-sidecar") ? '{"pid":77,"startedAt":"2026-01-01T00:00:01Z"}' : `{"pid":42,"containerId":"${CONTAINER_ID}","startedAt":"2026-01-01T00:00:00Z"}`,
      };
    case "pulumi-nodejs:dynamic/narwhal:ImageCheck":
      return {
        ...inputs,
        vllmApiVersion: "0.29.0",
        identity: inputs.runtime.kind === "docker" ? { kind: "docker", image: inputs.runtime.image, imageId: IMAGE_ID, resolvedDigest: null } : { kind: "native", command: "vllm" },
      };
    case "pulumi-nodejs:dynamic/narwhal:EngineGeneration":
      return { ...inputs, generationDigest: "sha256:" + Buffer.from(String(inputs.engineId).padEnd(32, ".")).toString("hex"), processStartTime: 1754000000.25, version: "0.29.0" };
    case "pulumi-nodejs:dynamic/narwhal:CacheCapture": {
      const rs = ranks(inputs.expected.dtype, 1);
      const layout = { tensorParallelSize: 1, ranks: rs, bytesPerTokenAllRanks: rs.reduce((n, r) => n + r.bytesPerToken, 0), source: "sim-endpoint", cacheConfig: {}, nixl: null };
      return { ...inputs, layout, cacheLayoutDigest: cacheLayoutDigest(layout) };
    }
    case "pulumi-nodejs:dynamic/narwhal:Attestation": {
      const doc = inputs.document as AttestationDocument;
      return { ...inputs, contract: doc.contract, attestationDigest: "sha256:" + "a7".repeat(32), launchDigest: "sha256:" + "1a".repeat(32), contractFingerprint: "0123456789abcdef" };
    }
    case "pulumi-nodejs:dynamic/narwhal:FabricEdge":
      return { ...inputs, measurement: { gbps: 30, retransmits: 0 }, verdict: "met", verdictReason: "30 Gbit/s meets the budget", evidence: { relativePath: "fabric-edge/x.json", digest: "sha256:" + "fe".repeat(32) } };
    case "pulumi-nodejs:dynamic/narwhal:Profile": {
      const row = { iid: inputs.engineId, ttft_a: 2e-8, ttft_b: 6e-5, ttft_c: 0.005, tpot_slope: 3e-6, tpot_intercept: 0.012, generation_digest: inputs.launchDigest ?? inputs.attestationDigest };
      return {
        ...inputs,
        row,
        profileDigest: "sha256:" + Buffer.from(String(inputs.engineId).padEnd(32, "p")).toString("hex"),
        bindingDigest: row.generation_digest,
        fitErrors: { prefillMape: 0.01, prefillWorstPoint: 0.02, decodeFitMape: 0.01, decodeCvMape: 0.02 },
        samples: { relativePath: `profile/artifacts/${"5a".repeat(32)}`, sha256: "sha256:" + "5a".repeat(32) },
      };
    }
    case "pulumi-nodejs:dynamic/narwhal:ProfileStore":
      return { ...inputs, storeDigest: "sha256:" + "57".repeat(32), samplesPath: String(inputs.path).replace(/\.json$/, ".samples.json"), samplesDigest: "sha256:" + "5d".repeat(32), count: 3 };
    default:
      return inputs;
  }
}

describe("mocks: profile mesh", () => {
  let Fleet: typeof import("../../components/fleet").Fleet;

  before(async () => {
    await pulumi.runtime.setMocks(
      {
        newResource(args) {
          registered.push({ type: args.type, name: args.name, inputs: args.inputs });
          return { id: `${args.name}-id`, state: state(args.type, args.name, args.inputs) };
        },
        call(args) {
          throw new Error(`unexpected call to ${args.token}`);
        },
      },
      "narwhal-fleet",
      "mock",
      false,
    );
    Fleet = (await import("../../components/fleet")).Fleet;
  });

  beforeEach(() => registered.splice(0));

  function build(): InstanceType<typeof Fleet> {
    const spec = parseFleetConfig({
      hosts: [
        { alias: "a", destination: "root@198.18.0.11", fabricInterface: "fab0" },
        { alias: "b", destination: "ops@198.18.0.12", port: 2222, fabricInterface: "fab0" },
      ],
      engines: [
        { id: "e1", host: "a", gpuIds: [0] },
        { id: "e2", host: "b", gpuIds: [0] },
        { id: "e3", host: "a", gpuIds: [1] },
      ],
      model: { servedName: "tiny", checkpointDir: "/models/tiny" },
      runtime: { kind: "native" },
      router: { host: "b" },
      profiling: { prefillLens: [256, 1024, 4096], decodeInputLens: [512, 4096], decodeConcurrency: [1, 4, 16] },
    });
    const secrets: FleetSecrets = { engineApiKey: pulumi.secret(API_KEY), sshPrivateKey: () => pulumi.secret("k"), sshPassword: () => undefined, grafanaAdminPassword: pulumi.secret("grafana-mock-pass") };
    return new Fleet("fleet", { spec, secrets, stack: "mock" });
  }

  it("makes one Profile per engine, bound to its generation, attestation, plan limit and the fleet's sweep, measured through the router host", async () => {
    const fleet = build();
    const summary = await settle(fleet.profiles.summary);
    const profiles = registered.filter((r) => r.type === "pulumi-nodejs:dynamic/narwhal:Profile");
    expect(profiles.map((r) => r.name).sort()).to.deep.equal(["fleet-profiles-e1", "fleet-profiles-e2", "fleet-profiles-e3"]);
    const e2 = profiles.find((r) => r.name === "fleet-profiles-e2")!.inputs;
    const generation = registered.find((r) => r.name === "fleet-e2-generation")!;
    expect(e2).to.deep.include({
      engineId: "e2",
      url: "http://198.18.0.12:8101",
      servedName: "tiny",
      generationDigest: "sha256:" + Buffer.from("e2".padEnd(32, ".")).toString("hex"),
      processStartTime: 1754000000.25,
      attestationDigest: "sha256:" + "a7".repeat(32),
      launchDigest: "sha256:" + "1a".repeat(32),
      maxNumSeqs: 8,
      stack: "mock",
    });
    expect(e2.planSha256).to.equal(generation.inputs.planSha256);
    expect(e2.sweep).to.deep.equal({ prefillLens: [256, 1024, 4096], decodeInputLens: [512, 4096], decodeConcurrency: [1, 4, 16], decodeTokens: 64, prefillRepeats: 3, decodeRepeats: 1 });
    // Measured from the router host (b), pinned to its verified key.
    expect(reveal(e2.via)).to.deep.include({ alias: "b", host: "198.18.0.12", port: 2222, user: "ops", hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMockKey" });
    // An SLO is not what a profile is measured against.
    expect(Object.keys(e2)).to.not.include.members(["slo", "ttftS", "tpotS"]);
    const store = registered.find((r) => r.type === "pulumi-nodejs:dynamic/narwhal:ProfileStore")!.inputs;
    expect(store.path).to.equal("/var/lib/narwhal-fleet/mock/router/runs/profiles.json");
    expect(store.engineIds).to.deep.equal(["e1", "e2", "e3"]);
    expect((store.profiles as Array<{ engineId: string }>).map((p) => p.engineId)).to.deep.equal(["e1", "e2", "e3"]);
    expect(summary.store).to.deep.equal({ path: "/var/lib/narwhal-fleet/mock/router/runs/profiles.json", digest: "sha256:" + "57".repeat(32), samplesPath: "/var/lib/narwhal-fleet/mock/router/runs/profiles.samples.json", samplesDigest: "sha256:" + "5d".repeat(32) });
    expect(Object.keys(summary.engines)).to.deep.equal(["e1", "e2", "e3"]);
    expect(summary.engines.e1).to.deep.include({ bindingDigest: "sha256:" + "1a".repeat(32), fitErrors: { prefillMape: 0.01, prefillWorstPoint: 0.02, decodeFitMape: 0.01, decodeCvMape: 0.02 } });
    // The API key travels as a secret only.
    expect(e2.apiKey).to.deep.include({ "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", value: API_KEY });
    for (const r of [...profiles, registered.find((r) => r.type === "pulumi-nodejs:dynamic/narwhal:ProfileStore")!]) {
      const plain = JSON.stringify({ ...r.inputs, apiKey: undefined });
      expect(plain, r.name).to.not.include(API_KEY);
    }
  });
});

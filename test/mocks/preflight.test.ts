/**
 * The preflight's wiring under mocks: one Preflight after the profile store, against the fleet document
 * the router loads and every engine's generation, attestation and profile, run from the router host,
 * the API key a secret; the stack's preflight output per gate. With calibration enabled, one
 * Calibration after the preflight with every engine's generation, transport and served context. No
 * provider method runs here; test/providers/{preflight-agreement,calibration}.test.ts run them.
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
    case "pulumi-nodejs:dynamic/narwhal:Preflight":
      return { ...inputs, fleetDocumentDigest: "sha256:" + "f1".repeat(32), gates: [{ gate: "reach", verdict: "pass", lines: [{ status: "ok", message: "e1 /health" }] }], transfers: [], rounds: 4, ranAt: "2026-01-01T00:00:00Z", wallSeconds: 1 };
    case "pulumi-nodejs:dynamic/narwhal:Calibration":
      return { ...inputs, fleetDocumentDigest: "sha256:" + "f1".repeat(32), paths: [], groups: [], floorS: 3.04, deadlineS: 3.1, currentDeadlineS: 2.5, sampledUnderBoundS: 10, prefillS: 1, clientTtftS: 4.15, clientTtftRequirementS: 10, fitsClientTtft: true, samples: 2400, failedAttempts: 0, identities: [], ranAt: "2026-01-01T00:00:00Z", wallSeconds: 1 };
    case "pulumi-nodejs:dynamic/narwhal:ProfileStore":
      return { ...inputs, storeDigest: "sha256:" + "57".repeat(32), samplesPath: String(inputs.path).replace(/\.json$/, ".samples.json"), samplesDigest: "sha256:" + "5d".repeat(32), count: 3 };
    default:
      return inputs;
  }
}

describe("mocks: preflight", () => {
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

  function build(extra: Record<string, unknown> = {}): InstanceType<typeof Fleet> {
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
      ...extra,
    });
    const secrets: FleetSecrets = { engineApiKey: pulumi.secret(API_KEY), sshPrivateKey: () => pulumi.secret("k"), sshPassword: () => undefined, grafanaAdminPassword: pulumi.secret("grafana-mock-pass") };
    return new Fleet("fleet", { spec, secrets, stack: "mock" });
  }

  it("checks the router's fleet document, every engine's generation, attestation and profile, the store, from the router host", async () => {
    const fleet = build();
    const gates = await settle(fleet.preflight.gates);
    expect(gates[0]).to.deep.include({ gate: "reach", verdict: "pass" });
    const preflights = registered.filter((r) => r.type === "pulumi-nodejs:dynamic/narwhal:Preflight");
    expect(preflights.map((r) => r.name)).to.deep.equal(["fleet-preflight"]);
    const i = preflights[0]!.inputs as Record<string, any>;
    expect(i.engines).to.deep.equal(
      ["e1", "e2", "e3"].map((id) => ({
        engineId: id,
        generationDigest: "sha256:" + Buffer.from(id.padEnd(32, ".")).toString("hex"),
        attestationDigest: "sha256:" + "a7".repeat(32),
        launchDigest: "sha256:" + "1a".repeat(32),
        profileDigest: "sha256:" + Buffer.from(id.padEnd(32, "p")).toString("hex"),
      })),
    );
    expect((i.profiles as Array<{ iid: string }>).map((r) => r.iid)).to.deep.equal(["e1", "e2", "e3"]);
    expect(i.profileStoreDigest).to.equal("sha256:" + "57".repeat(32));
    expect(i).to.deep.include({ pairs: "mesh", repeats: 1, schedule: "concurrent", stack: "mock" });
    const doc = i.fleetDocument as Record<string, any>;
    expect(doc.schema).to.equal("narwhal.fleet");
    expect(doc.engines.map((e: { iid: string }) => e.iid)).to.deep.equal(["e1", "e2", "e3"]);
    expect(doc.slo).to.have.keys(["ttft_s", "tpot_s"]);
    expect(reveal(i.via)).to.deep.include({ alias: "b", host: "198.18.0.12", port: 2222, user: "ops" });
    expect(i.apiKey).to.deep.include({ "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", value: API_KEY });
    expect(JSON.stringify({ ...i, apiKey: undefined })).to.not.include(API_KEY);
  });

  it("adds no calibration unless enabled", () => {
    const fleet = build();
    expect(fleet.calibration).to.equal(undefined);
    expect(registered.filter((r) => r.type === "pulumi-nodejs:dynamic/narwhal:Calibration")).to.deep.equal([]);
  });

  it("calibrates after the preflight, from the router host, against every engine's generation, transport and served context", async () => {
    const fleet = build({ calibration: { enabled: true }, launch: { maxModelLen: 8192 }, slo: { firstTokenTimeoutS: 3 } });
    expect(await settle(fleet.calibration!.deadlineS)).to.equal(3.1);
    const calibrations = registered.filter((r) => r.type === "pulumi-nodejs:dynamic/narwhal:Calibration");
    expect(calibrations.map((r) => r.name)).to.deep.equal(["fleet-calibration"]);
    const i = calibrations[0]!.inputs as Record<string, any>;
    expect(i.engines).to.deep.equal(
      ["e1", "e2", "e3"].map((id, k) => ({
        engineId: id,
        role: k === 0 ? "prefill" : "decode",
        pin: false,
        generationDigest: "sha256:" + Buffer.from(id.padEnd(32, ".")).toString("hex"),
        attestationDigest: "sha256:" + "a7".repeat(32),
        launchDigest: "sha256:" + "1a".repeat(32),
        transport: "tcp",
        maxModelLen: 8192,
      })),
    );
    // Spanning the served context up to the longest admitted input; the bound four deadlines out.
    expect(i).to.deep.include({ model: "tiny", runtime: { kind: "native" }, inputLengths: [128, 2048, 4096, 8191], samplesPerGroup: 100, observationBoundS: 12, maxFailuresPerGroup: 20, routerOverheadS: 0.05, schedule: "concurrent", stack: "mock" });
    expect((i.fleetDocument as Record<string, any>).engine.first_token_timeout_s).to.equal(3);
    expect(reveal(i.via)).to.deep.include({ alias: "b", host: "198.18.0.12", port: 2222, user: "ops" });
    expect(JSON.stringify({ ...i, apiKey: undefined })).to.not.include(API_KEY);
  });
});

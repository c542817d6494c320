/**
 * The attestation mesh's wiring under mocks: which sidecar each engine gets (by runtime backend), what
 * its Attestation is checked against, and the fleet contract and document built from them. No
 * provider method runs here; test/providers/attestation.test.ts runs the sidecar and the provider for real.
 */
import { expect } from "chai";
import * as pulumi from "@pulumi/pulumi";
import { parseFleetConfig } from "../../lib/config";
import { cacheLayoutDigest } from "../../lib/engine/cache-layout";
import { documentDigest, type AttestationDocument } from "../../lib/attestation";
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
      return { ...inputs, contract: doc.contract, attestationDigest: "sha256:" + "a7".repeat(32), contractFingerprint: "0123456789abcdef" };
    }
    case "pulumi-nodejs:dynamic/narwhal:FabricEdge":
      return { ...inputs, measurement: { gbps: 30, retransmits: 0 }, verdict: "met", verdictReason: "30 Gbit/s meets the budget", evidence: { relativePath: "fabric-edge/x.json", digest: "sha256:" + "fe".repeat(32) } };
    default:
      return inputs;
  }
}

describe("mocks: attestation mesh", () => {
  let Fleet: typeof import("../../components/fleet").Fleet;

  before(async () => {
    await pulumi.runtime.setMocks(
      {
        newResource(args) {
          registered.push({ type: args.type, name: args.name, inputs: args.inputs });
          // A @pulumi/docker container is known by its id, as the docker backend reads it.
          const id = args.type === "docker:index/container:Container" ? CONTAINER_ID : `${args.name}-id`;
          return { id, state: state(args.type, args.name, args.inputs) };
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

  function build(runtime: Record<string, unknown>, e3: Record<string, unknown> = {}): InstanceType<typeof Fleet> {
    const spec = parseFleetConfig({
      hosts: [
        { alias: "a", destination: "root@198.18.0.11", fabricInterface: "fab0" },
        { alias: "b", destination: "ops@198.18.0.12", port: 2222, fabricInterface: "fab0" },
      ],
      engines: [
        { id: "e1", host: "a", gpuIds: [0] },
        { id: "e2", host: "b", gpuIds: [0] },
        { id: "e3", host: "a", gpuIds: [1], ...e3 },
      ],
      model: { servedName: "tiny", checkpointDir: "/models/tiny" },
      runtime,
      attestation: { command: "/opt/narwhal/bin/narwhal-attest", startTimeoutS: 45 },
    });
    const secrets: FleetSecrets = { engineApiKey: pulumi.secret(API_KEY), sshPrivateKey: () => pulumi.secret("k"), sshPassword: () => undefined };
    return new Fleet("fleet", { spec, secrets, stack: "mock" });
  }

  for (const kind of ["docker-cli", "docker"]) {
    it(`a container engine's sidecar (${kind}) runs on its host, watches its container and attests its checked image`, async () => {
      const fleet = build({ kind, image: IMAGE_ID });
      const contract = await settle(fleet.attestation.contract);
      expect(contract.contract).to.include({ image_digest: IMAGE_ID, model_dtype: "bfloat16", transfer_version: "0.7.1", engine_version: "0.29.0" });
      expect(contract.undeclared).to.deep.equal(["connector_version"]);
      const sidecars = registered.filter((r) => r.name.endsWith("-sidecar"));
      expect(sidecars.map((r) => r.name).sort()).to.deep.equal(["fleet-attestation-e1-sidecar", "fleet-attestation-e2-sidecar", "fleet-attestation-e3-sidecar"]);
      const e2 = sidecars.find((r) => r.name === "fleet-attestation-e2-sidecar")!.inputs;
      expect(reveal(e2.connection)).to.include({ host: "198.18.0.12", user: "ops", port: 2222 });
      const create = String(e2.create);
      expect(create).to.include(`'/opt/narwhal/bin/narwhal-attest' '--document' '/var/lib/narwhal-fleet/mock/attestation/e2/engine-attestation.json' '--engine-base' 'http://198.18.0.12:8101' '--engine-container' '${CONTAINER_ID}' '--host' '198.18.0.12' '--port' '8201'`);
      expect(create).to.include("within attestation.startTimeoutS 45s");
      const attestation = registered.find((r) => r.name === "fleet-attestation-e2")!.inputs;
      const doc = attestation.document as AttestationDocument;
      expect(e2.triggers).to.deep.equal([documentDigest(doc), "http://198.18.0.12:8201/v1/attestation", "/opt/narwhal/bin/narwhal-attest"]);
      expect(attestation).to.deep.include({
        engineId: "e2",
        url: "http://198.18.0.12:8201/v1/attestation",
        documentDigest: documentDigest(doc),
        processIdentity: { hostAlias: "b", containerId: CONTAINER_ID },
        sidecar: { pid: 77, startedAt: "2026-01-01T00:00:01Z" },
        probeTimeoutS: 45,
        stack: "mock",
      });
      expect(doc.launch).to.include({ generation_sha256: attestation.generationDigest, plan_sha256: attestation.planSha256, image_id: IMAGE_ID });
      // The sidecar needs no credential: the key reaches neither it nor its attestation.
      for (const r of registered.filter((r) => r.name.startsWith("fleet-attestation"))) expect(JSON.stringify(r.inputs), r.name).to.not.include(API_KEY);
    });
  }

  it("a native engine's sidecar watches its pid; the fleet document carries the contract and every attestation_url", async () => {
    const fleet = build({ kind: "native" });
    const [contract, doc, engines] = await Promise.all([settle(fleet.attestation.contract), settle(fleet.attestation.fleetDocument), settle(fleet.attestation.engines)]);
    // The live owner of the engine's port, else the launcher's pid (42).
    const create = String(registered.find((r) => r.name === "fleet-attestation-e1-sidecar")!.inputs.create);
    expect(create).to.include(`'--engine-pid' "$engine_pid" '--host' '198.18.0.11' '--port' '8200'`).and.include("engine_pid=42");
    expect(contract.contract.image_digest).to.equal("");
    expect(doc.engine_contract).to.deep.equal(contract.contract);
    expect((doc.engines as Array<{ iid: string; attestation_url: string }>).map((e) => [e.iid, e.attestation_url])).to.deep.equal([
      ["e1", "http://198.18.0.11:8200/v1/attestation"],
      ["e2", "http://198.18.0.12:8201/v1/attestation"],
      ["e3", "http://198.18.0.11:8202/v1/attestation"],
    ]);
    expect(engines.e3).to.deep.equal({ url: "http://198.18.0.11:8202/v1/attestation", attestationDigest: "sha256:" + "a7".repeat(32), contractFingerprint: "0123456789abcdef" });
  });

  it("an engine launched with another dtype fails the fleet contract, naming the field and the engines", async () => {
    const fleet = build({ kind: "native" }, { overrides: { dtype: "float16" } });
    let message = "";
    await settle(fleet.attestation.contract).catch((err: Error) => (message = err.message));
    expect(message.split("\n").slice(1)).to.deep.equal(['  - model_dtype: "bfloat16" (e1, e2) vs "float16" (e3)']);
  });
});

/**
 * The attestation mesh's wiring under mocks: which sidecar each engine gets (by runtime backend), what
 * its Attestation is checked against, and the fleet contract and document built from them. No
 * provider method runs here; test/providers/attestation.test.ts runs the sidecar and the provider for real.
 */
import { expect } from "chai";
import { documentDigest, type AttestationDocument } from "../../lib/attestation/document";
import { CHECK_DIGEST, CONTAINER_ID, IMAGE_ID, fleetConfig, mockSecrets, reveal, settle, useFleetMocks } from "./support/fleet";

const API_KEY = "mock-api-key-attest-0123";

describe("mocks: attestation mesh", () => {
  const mocks = useFleetMocks();
  const registered = mocks.registered;

  function build(runtime: Record<string, unknown>, e3: Record<string, unknown> = {}) {
    const config = fleetConfig({ runtime, attestation: { command: "/opt/narwhal/bin/narwhal-attest", startTimeoutS: 45 } });
    const engines = config.engines as Array<Record<string, unknown>>;
    engines[2] = { ...engines[2], ...e3 };
    return mocks.build(config, mockSecrets(API_KEY));
  }

  for (const kind of ["docker-cli", "docker"]) {
    it(`a container engine's sidecar (${kind}) runs on its host, watches its container and attests its checked image`, async () => {
      const fleet = build({ kind, image: IMAGE_ID });
      const contract = await settle(fleet.attestation.contract);
      expect(contract.contract).to.include({ image_digest: IMAGE_ID, model_dtype: "bfloat16", transfer_version: "0.7.1", connector_version: 9, engine_version: "0.29.0" });
      expect(contract.undeclared).to.deep.equal([]);
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
      // The NIXL versions are what the engine's image check read inside its image.
      expect([doc.sources.transfer_version, doc.sources.connector_version]).to.deep.equal([`image check ${CHECK_DIGEST}`, `image check ${CHECK_DIGEST}`]);
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

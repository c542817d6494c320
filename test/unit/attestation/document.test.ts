/**
 * The attestation document built from recorded facts, judged by the pinned narwhal-inference itself:
 * its loader accepts it, its digests equal ours, and an attestation its sidecar code makes from it
 * passes our checks only while it binds the proved generation.
 */
import { expect } from "chai";
import { attestationDocument, documentDigest, type AttestationDocument } from "../../../lib/attestation/document";
import { checkAttestation } from "../../../lib/attestation/verify";
import { facts, narwhal } from "./fixtures";

const LOAD = `
import json, sys
from pathlib import Path
from narwhal.backends import load as load_backend
from narwhal.contracts import canonical_digest
from narwhal.engines.attestation import AttestationDocument
path = Path(sys.argv[1]) / "doc.json"
doc = AttestationDocument.load(path)
identity = load_backend("vllm").identity
print(json.dumps({
  "contract": doc.contract.fields(), "sources": doc.sources, "launch": doc.launch,
  "digest": canonical_digest(json.loads(path.read_text())), "missing": doc.contract.missing(),
  "kv_lease": identity.kv_lease({"launch": doc.launch}), "sequence_limit": identity.sequence_limit({"launch": doc.launch}),
}))
`;

/** The sidecar's own make_attestation over the document, serialised as its FastAPI app answers. */
const ATTEST = `
import json, sys
from pathlib import Path
from narwhal.engines.attestation import AttestationDocument, EngineIdentity, make_attestation
doc = AttestationDocument.load(Path(sys.argv[1]) / "doc.json")
start = float(Path(sys.argv[1], "start").read_text())
payload = make_attestation(doc, EngineIdentity("0.29.0", start))
print(json.dumps(payload, ensure_ascii=False, separators=(",", ":")))
`;

function attest(doc: AttestationDocument, start: string): string {
  return narwhal(ATTEST, { "doc.json": JSON.stringify(doc), start }).trim();
}

describe("attestation document", () => {
  const f = facts();
  const doc = attestationDocument(f);

  it("loads in narwhal's AttestationDocument.load with a complete contract and the same digest", () => {
    const seen = JSON.parse(narwhal(LOAD, { "doc.json": JSON.stringify(doc, null, 2) }));
    expect(seen.contract).to.deep.equal({
      engine_version: "0.29.0",
      image_digest: "",
      transfer_version: "0.7.1",
      connector_version: 9,
      model_architecture: "LlamaForCausalLM",
      model_dtype: "bfloat16",
      kv_heads: 4,
      head_size: 64,
      hidden_layers: 22,
      attention_backend: "FLASH_ATTN",
      kv_cache_dtype: "auto",
      cross_layers_blocks: false,
      hybrid_kv_cache_manager: false,
      connector: "NixlConnector",
      kv_role: "kv_both",
      transfer_mode: "pull",
      speculative_config: "disabled",
      enforce_handshake_compat: true,
    });
    expect(seen.missing).to.deep.equal([]);
    expect(seen.sources).to.deep.equal(doc.sources);
    expect(Object.keys(seen.sources)).to.not.include("image_digest"); // empty for a native engine, so no source
    expect(seen.digest).to.equal(documentDigest(doc));
    // The router reads the lease and the sequence limit from the attested launch arguments.
    expect(seen.kv_lease).to.equal(30);
    expect(seen.sequence_limit).to.equal(8);
    expect(seen.launch).to.include({ plan_sha256: f.plan.planSha256, cache_layout_sha256: f.cacheLayoutDigest, generation_sha256: f.generation.generationDigest });
    expect(seen.launch.args).to.include("--served-model-name").and.not.include("tiny").and.not.include("198.18.0.11");
  });

  it("a new generation is a new document; the same facts give the same document", () => {
    expect(documentDigest(attestationDocument(facts()))).to.equal(documentDigest(doc));
    const restarted = { ...f, generation: { ...f.generation, generationDigest: "sha256:" + "7f".repeat(32) } };
    expect(documentDigest(attestationDocument(restarted))).to.not.equal(documentDigest(doc));
  });

  it("a container engine attests its checked image, and needs one", () => {
    const container = { ...f, generation: { ...f.generation, processIdentity: { hostAlias: "a", containerId: "ab".repeat(32) } } };
    expect(() => attestationDocument(container)).to.throw("engine e1: a container engine needs its checked image ID (sha256:<64 hex>), got null; no attestation document was written");
    const withImage = attestationDocument({ ...container, imageId: "sha256:" + "1d".repeat(32) });
    expect(withImage.contract.image_digest).to.equal("sha256:" + "1d".repeat(32));
    expect(withImage.launch.process).to.deep.equal({ container_id: "ab".repeat(32) });
    const seen = JSON.parse(narwhal(LOAD, { "doc.json": JSON.stringify(withImage) }));
    expect(seen.sources.image_digest).to.equal(`image check sha256:${"1d".repeat(32)}`);
  });

  it("refuses facts narwhal would refuse, naming the engine and the fact", () => {
    const off = { ...f, plan: { ...f.plan, argv: f.plan.argv.map((a) => a.replace('"enforce_handshake_compat":true', '"enforce_handshake_compat":false')) } };
    expect(() => attestationDocument(off)).to.throw(/^engine e1: the launch plan turns enforce_handshake_compat off/);
    const lmcache = { ...f, plan: { ...f.plan, argv: f.plan.argv.map((a) => a.replace('"NixlConnector"', '"LMCacheConnectorV1"')) } };
    expect(() => attestationDocument(lmcache)).to.throw('engine e1: connector "LMCacheConnectorV1" is not a NIXL connector (NixlConnector, NixlPullConnector, NixlPushConnector)');
    expect(() => attestationDocument({ ...f, cacheLayoutDigest: "sha256:" + "00".repeat(32) })).to.throw("is not the digest of the captured layout");
  });

  it("names the image check as the source of the NIXL versions", () => {
    expect([doc.sources.transfer_version, doc.sources.connector_version]).to.deep.equal([`image check sha256:${"d1".repeat(32)}`, `image check sha256:${"d1".repeat(32)}`]);
  });

  it("leaves the NIXL versions of a check made before they were read empty, as narwhal's loader allows", () => {
    const unknown = attestationDocument({ ...f, transfer: { ...f.transfer, nixlVersion: null, connectorVersion: null } });
    const seen = JSON.parse(narwhal(LOAD, { "doc.json": JSON.stringify(unknown) }));
    expect(seen.missing).to.deep.equal(["connector_version", "transfer_version"]);
    expect(seen.sources).to.not.have.any.keys("connector_version", "transfer_version");
  });

  for (const start of ["1754000000.0", "1754000123.456789"]) {
    it(`checks an attestation made by narwhal's sidecar code (process start ${start})`, () => {
      const expected = { document: doc, documentDigest: documentDigest(doc), planSha256: f.plan.planSha256, cacheLayoutDigest: f.cacheLayoutDigest };
      const text = attest(doc, start);
      const ok = checkAttestation(text, { ...expected, generation: { generationDigest: f.generation.generationDigest, processStartTime: Number(start), version: "0.29.0" } });
      expect(ok.problems).to.deep.equal([]);
      expect(ok.attestationDigest).to.equal(JSON.parse(text).attestation_digest);
      expect(ok.contract).to.deep.equal(doc.contract);

      const other = checkAttestation(text, {
        ...expected,
        generation: { generationDigest: "sha256:" + "7f".repeat(32), processStartTime: Number(start) + 3, version: "0.29.1" },
      });
      expect(other.problems).to.deep.equal([
        `launch.generation_sha256 is "${f.generation.generationDigest}", expected sha256:${"7f".repeat(32)}`,
        'engine version is "0.29.0", the proved generation runs "0.29.1"',
        `engine process started at ${Number(start)}, the proved generation at ${Number(start) + 3}`,
      ]);
    });
  }

  it("reports a tampered answer: digest, contract field and document", () => {
    const text = attest(doc, "1754000000.5");
    const payload = JSON.parse(text);
    payload.contract.model_dtype = "float16";
    const seen = checkAttestation(JSON.stringify(payload), {
      document: doc,
      documentDigest: documentDigest(doc),
      planSha256: f.plan.planSha256,
      cacheLayoutDigest: f.cacheLayoutDigest,
      generation: { generationDigest: f.generation.generationDigest, processStartTime: 1754000000.5, version: "0.29.0" },
    });
    expect(seen.problems[0]).to.match(/^attestation_digest "sha256:[0-9a-f]{64}" does not match the response \(sha256:[0-9a-f]{64}\)$/);
    expect(seen.problems.slice(1)).to.deep.include.members([
      "launch_digest does not match the launch evidence",
      'contract.model_dtype is "float16", the document has "bfloat16"',
    ]);
    expect(seen.problems.at(-1)).to.match(/^the sidecar serves document sha256:[0-9a-f]{64}, not sha256:/);
  });
});

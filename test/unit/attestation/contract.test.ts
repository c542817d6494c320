/** finalize-fleet's rule: one contract for every engine, and a refusal that names the field and the engines. */
import { expect } from "chai";
import { attestationDocument } from "../../../lib/attestation/document";
import { contractProblems, engineContract, type AttestedContract } from "../../../lib/attestation/contract";
import { facts, narwhal } from "./fixtures";

const NARWHAL_VIEW = `
import json, sys
from pathlib import Path
from narwhal.config import EngineContract
c = EngineContract(**json.loads(Path(sys.argv[1], "c.json").read_text()))
print(json.dumps({"fingerprint": c.fingerprint(), "missing": c.missing()}))
`;

function attested(id: string, over: Parameters<typeof facts>[0] = {}): AttestedContract {
  return { engineId: id, contract: attestationDocument(facts({ id, ...over })).contract };
}

function rejection(fn: () => unknown): { code?: string; message: string } {
  try {
    fn();
  } catch (err) {
    return err as { code?: string; message: string };
  }
  throw new Error("expected a rejection");
}

describe("engine_contract", () => {
  it("is the one contract every engine attested, with narwhal's fingerprint", () => {
    const fleet = engineContract([attested("e1"), attested("e2", { pid: 77 }), attested("e3", { processStartTime: 9 })]);
    const view = JSON.parse(narwhal(NARWHAL_VIEW, { "c.json": JSON.stringify(fleet.contract) }));
    expect(fleet.fingerprint).to.equal(view.fingerprint).and.match(/^[0-9a-f]{16}$/);
    expect(fleet.undeclared).to.deep.equal(view.missing).and.deep.equal([]);
    expect(fleet.engines).to.deep.equal(["e1", "e2", "e3"]);
    expect(fleet.contract.model_dtype).to.equal("bfloat16");
  });

  it("lists what no engine declares, as narwhal's missing() does", () => {
    const bare = (id: string): AttestedContract => ({
      engineId: id,
      contract: attestationDocument({ ...facts({ id }), transfer: { nixlVersion: null, connectorVersion: null, checkDigest: "sha256:" + "d1".repeat(32) }, model: { architecture: null, numHiddenLayers: 22, configSha256: "c0".repeat(32) } }).contract,
    });
    const fleet = engineContract([bare("e1"), bare("e2")]);
    const view = JSON.parse(narwhal(NARWHAL_VIEW, { "c.json": JSON.stringify(fleet.contract) }));
    expect(fleet.undeclared).to.deep.equal(view.missing).and.deep.equal(["connector_version", "model_architecture", "transfer_version"]);
  });

  it("refuses an engine launched with another dtype, naming the field and who holds which value", () => {
    const err = rejection(() => engineContract([attested("e1"), attested("e2"), attested("e3", { policy: { dtype: "float16" } })]));
    expect(err.code).to.equal("NARWHAL_CONTRACT_MISMATCH");
    expect(err.message).to.equal(
      "engine_contract: the engines' attested contracts differ, so KV handoffs between them are not safe; relaunch the odd engines with the fleet's settings:\n" +
        '  - model_dtype: "bfloat16" (e1, e2) vs "float16" (e3)',
    );
  });

  it("names every differing field in narwhal's field order", () => {
    const e2 = attested("e2");
    const odd = { engineId: "e2", contract: { ...e2.contract, engine_version: "0.29.1", kv_cache_dtype: "fp8", transfer_mode: "push" } };
    const err = rejection(() => engineContract([attested("e1"), odd, attested("e4")]));
    expect(err.message.split("\n").slice(1)).to.deep.equal([
      '  - engine_version: "0.29.0" (e1, e4) vs "0.29.1" (e2)',
      '  - kv_cache_dtype: "auto" (e1, e4) vs "fp8" (e2)',
      '  - transfer_mode: "pull" (e1, e4) vs "push" (e2)',
    ]);
  });

  it("has no contract without an attestation", () => {
    expect(rejection(() => engineContract([])).message).to.equal("engine_contract: no engine was attested, so the fleet has no contract");
  });

  it("says what narwhal's loader refuses in a contract", () => {
    const good = attested("e1").contract;
    expect(contractProblems(good)).to.deep.equal([]);
    expect(contractProblems({ ...good, kv_heads: -1, enforce_handshake_compat: false, image_digest: "vllm:latest", extra: 1 })).to.deep.equal([
      "unknown contract field(s): extra",
      "contract.kv_heads must be a nonnegative integer",
      "contract.enforce_handshake_compat must stay true",
      "contract.image_digest must be an immutable sha256 digest",
    ]);
  });
});

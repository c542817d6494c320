import { expect } from "chai";
import { attestationDocument, documentDigest } from "../../../lib/attestation/document";
import { chooseDocument, type RunbookAttestationSource } from "../../../lib/attestation/runbook-document";
import { facts, narwhal } from "./fixtures";
import { runbookAttestationDocument } from "./runbook-document-fixture";

const RUN = "/srv/runbook/runs/engine-launch-1";
const START = 1_790_000_000.25;

describe("attestation: which document an adopted runbook engine's sidecar serves", () => {
  const program = attestationDocument(facts());
  const runbookText = (over: Record<string, unknown> = {}) =>
    JSON.stringify({ ...runbookAttestationDocument(program.contract, RUN, program.launch.args), ...over }, null, 2) + "\n";
  const source = (text = runbookText()): RunbookAttestationSource => ({ run: RUN, text, processStartS: START - 0.2 });

  it("serves the program's own document when the engine is not an adopted runbook engine", () => {
    const chosen = chooseDocument(program, undefined, START);
    expect(chosen).to.deep.equal({ source: "program", document: program, text: JSON.stringify(program), digest: documentDigest(program) });
  });

  it("keeps the runbook's document, byte for byte, for the process the runbook attested when its contract is the program's", () => {
    const text = runbookText();
    const chosen = chooseDocument(program, source(text), START);
    expect(chosen.source, chosen.reason).to.equal("runbook");
    expect(chosen.text).to.equal(text);
    expect(chosen.reason).to.equal(`serves the runbook's ${RUN}/engine-attestation.json: the same engine process, and its contract equals the one the program measured`);
    // The digest narwhal computes for the document the sidecar will serve.
    const narwhalDigest = narwhal("import json, sys, pathlib\nfrom narwhal.contracts import canonical_digest\nprint(canonical_digest(json.loads((pathlib.Path(sys.argv[1]) / 'doc.json').read_text())))", { "doc.json": text }).trim();
    expect(chosen.digest).to.equal(narwhalDigest);
    expect(chosen.digest).to.not.equal(documentDigest(program));
  });

  it("serves the program's document once the engine restarted since the runbook attested it", () => {
    const chosen = chooseDocument(program, source(), START + 60);
    expect(chosen.source).to.equal("program");
    expect(chosen.reason).to.equal(
      `the runbook's ${RUN}/engine-attestation.json is not served: the engine process started at ${START + 60}, after the runbook's (${START - 0.2}): restarted since the runbook attested it; the program serves its own document`,
    );
  });

  it("serves the program's document when the runbook's contract differs, naming each field and both values", () => {
    const text = runbookText({ contract: { ...program.contract, kv_heads: 8, attention_backend: "TRITON_ATTN" } });
    const chosen = chooseDocument(program, source(text), START);
    expect(chosen.source).to.equal("program");
    expect(chosen.reason).to.include('its contract differs from the one the program measured: contract.kv_heads is 8 there, 4 here; contract.attention_backend is "TRITON_ATTN" there, "FLASH_ATTN" here');
  });

  it("serves the program's document for a runbook file that is not a narwhal attestation document", () => {
    expect(chooseDocument(program, source("{not json"), START).reason).to.match(/engine-attestation\.json is not JSON: .* at offset 1; the program serves its own document$/);
    expect(chooseDocument(program, source(runbookText({ schema_version: 2 })), START).reason).to.include('it is "narwhal.attestation" version 2, not narwhal.attestation version 1');
    expect(chooseDocument(program, source(runbookText({ contract: { ...program.contract, kv_heads: "4" } })), START).reason).to.include("its contract does not load");
  });
});

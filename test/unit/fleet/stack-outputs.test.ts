import { expect } from "chai";
import { engineIdentities, evidenceByGate } from "../../../lib/fleet/stack-outputs";

const d = (c: string) => `sha256:${c.repeat(64)}`;

describe("fleet: stack outputs", () => {
  const engines = [
    { id: "e1", role: "prefill" as const, host: "sim1" },
    { id: "e2", role: "decode" as const, host: "sim2" },
  ];

  it("gives each engine its role, host alias and the digests of Gates C, E and F", () => {
    const out = engineIdentities(
      engines,
      { e1: { generationDigest: d("1") }, e2: { generationDigest: d("2") } },
      { e1: { attestationDigest: d("3") }, e2: { attestationDigest: d("4") } },
      { e1: { profileDigest: d("5") }, e2: { profileDigest: d("6") } },
    );
    expect(out).to.deep.equal({
      e1: { id: "e1", role: "prefill", host: "sim1", generationDigest: d("1"), attestationDigest: d("3"), profileDigest: d("5") },
      e2: { id: "e2", role: "decode", host: "sim2", generationDigest: d("2"), attestationDigest: d("4"), profileDigest: d("6") },
    });
  });

  it("names the engine and the digest it lacks rather than output a partial identity", () => {
    expect(() => engineIdentities(engines, { e1: { generationDigest: d("1") }, e2: { generationDigest: d("2") } }, { e1: { attestationDigest: d("3") } }, { e1: { profileDigest: d("5") }, e2: { profileDigest: d("6") } })).to.throw(
      "stack outputs: engine e2 has no attestation digest",
    );
  });

  it("lists evidence per gate in path order, every gate present, unwritten records left out", () => {
    const out = evidenceByGate([
      { gate: "C", kind: "generation", subject: "engine e2", ref: { relativePath: "generation/b.json", digest: d("b") } },
      { gate: "C", kind: "generation", subject: "engine e1", ref: { relativePath: "generation/a.json", digest: d("a") } },
      { gate: "A", kind: "discovery", subject: "host sim1", ref: { relativePath: "discovery/c.json", digest: d("c") } },
      { gate: "F", kind: "profile", subject: "engine e1", ref: undefined },
    ]);
    expect(Object.keys(out)).to.deep.equal(["A", "B", "C", "D", "E", "F", "G"]);
    expect(out.C.map((e) => e.subject)).to.deep.equal(["engine e1", "engine e2"]);
    expect(out.A).to.deep.equal([{ kind: "discovery", subject: "host sim1", relativePath: "discovery/c.json", digest: d("c") }]);
    expect(out.F).to.deep.equal([]);
  });
});

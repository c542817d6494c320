import { expect } from "chai";
import { areKvPeers, kvComponents } from "../../../lib/fleet/kv-components";

describe("KV components (who restarts together)", () => {
  it("joins engines whose roles let KV flow either way; unpinned roles may both produce and consume", () => {
    const engines = [
      { id: "p1", role: "prefill" as const },
      { id: "p2", role: "prefill" as const },
      { id: "d1", role: "decode" as const },
    ];
    expect(kvComponents(engines)).to.deep.equal([["p1", "p2", "d1"]]);
    expect(areKvPeers(engines[0], engines[1])).to.equal(true);
  });

  it("with pinned roles, two prefill engines are peers only through a decode engine, and reach each other through it", () => {
    const p1 = { id: "p1", role: "prefill" as const, pin: true };
    const p2 = { id: "p2", role: "prefill" as const, pin: true };
    const d1 = { id: "d1", role: "decode" as const, pin: true };
    expect(areKvPeers(p1, p2)).to.equal(false);
    expect(areKvPeers(p1, d1)).to.equal(true);
    // p2 never handshakes p1, but a wave restarting d1 leaves p2 holding d1's old handshake: same component.
    expect(kvComponents([p1, d1, p2])).to.deep.equal([["p1", "d1", "p2"]]);
  });

  it("leaves out engines no KV reaches (only pinned prefill engines), and keeps components apart", () => {
    const pins = (id: string, role: "prefill" | "decode") => ({ id, role, pin: true });
    expect(kvComponents([pins("p1", "prefill"), pins("p2", "prefill")])).to.deep.equal([]);
    expect(kvComponents([pins("a", "prefill"), pins("b", "decode"), pins("c", "decode")])).to.deep.equal([["a", "b", "c"]]);
    expect(kvComponents([{ id: "solo", role: "prefill" as const }])).to.deep.equal([]);
  });
});

import { expect } from "chai";
import { movedPeers, peerChange, restartedMembers, waveFor } from "../../../lib/engine/peer-wave";
import { UNKNOWN } from "../../../lib/unknown";

const isKnown = (v: unknown) => !JSON.stringify(v ?? null).includes(UNKNOWN);
const pid = (hostAlias: string, p: number) => ({ hostAlias, pid: p });

describe("peer restart wave (pure)", () => {
  const recorded = {
    e1: { processIdentity: pid("h1", 10), processStartTime: 100 },
    e2: { processIdentity: pid("h1", 20), processStartTime: 200 },
    e3: { processIdentity: { hostAlias: "h2", containerId: "ab".repeat(32) }, processStartTime: 300 },
  };
  const current = [
    { engineId: "e1", processIdentity: pid("h1", 10) },
    { engineId: "e2", processIdentity: pid("h1", 20) },
    { engineId: "e3", processIdentity: { hostAlias: "h2", containerId: "ab".repeat(32) } },
  ];

  it("finds a member restarted by hand from its live start, and restarts every other member", () => {
    const restarted = restartedMembers(recorded, current, { e1: 100, e2: 250, e3: 300 });
    expect(restarted).to.deep.equal([{ engineId: "e2", reason: "process start 200 -> 250" }]);
    expect(waveFor(["e1", "e2", "e3"], restarted)).to.deep.equal(["e1", "e3"]);
  });

  it("finds a member the program started anew from its identity, whatever its start says", () => {
    const moved = current.map((m) => (m.engineId === "e1" ? { ...m, processIdentity: pid("h1", 11) } : m));
    expect(restartedMembers(recorded, moved, {})).to.deep.equal([{ engineId: "e1", reason: "pid 10 -> pid 11 (started anew by this program)" }]);
  });

  it("restarts nobody when nothing moved, when an engine did not answer, or for a member it never recorded", () => {
    expect(restartedMembers(recorded, current, { e1: 100, e2: 200, e3: 300 })).to.deep.equal([]);
    expect(restartedMembers(recorded, current, { e1: null, e2: undefined })).to.deep.equal([]);
    expect(restartedMembers(recorded, [...current, { engineId: "e4", processIdentity: pid("h3", 5) }], { e4: 999 })).to.deep.equal([]);
    expect(waveFor(["e1", "e2"], [])).to.deep.equal([]);
  });

  it("a generation's peers: a moved start or a new identity replaces, joining or leaving only updates", () => {
    const olds = { peers: { e2: { processIdentity: pid("h1", 20) } }, peerStarts: { e2: 200 } };
    expect(peerChange(olds, { e2: { processIdentity: pid("h1", 20) } }, isKnown)).to.equal("none");
    expect(peerChange({ ...olds, observedPeerStarts: { e2: 250 } }, olds.peers, isKnown)).to.equal("replace");
    expect(peerChange({ ...olds, observedPeerStarts: { e2: null } }, olds.peers, isKnown)).to.equal("none");
    expect(peerChange(olds, { e2: { processIdentity: pid("h1", 21) } }, isKnown)).to.equal("replace");
    // In preview, a peer the program is starting anew has no identity yet.
    expect(peerChange(olds, { e2: { processIdentity: UNKNOWN as never } }, isKnown)).to.equal("replace");
    expect(peerChange(olds, { e2: olds.peers.e2, e5: { processIdentity: pid("h3", 5) } }, isKnown)).to.equal("update");
    expect(peerChange(olds, undefined, isKnown)).to.equal("update");
    expect(peerChange({}, olds.peers, isKnown)).to.equal("update");
    expect(movedPeers({ a: 1, b: 2 }, { a: 1, b: 3 })).to.deep.equal(["b"]);
  });
});

import { expect } from "chai";
import { edgeInputProblems, type FabricEdgeInputs } from "../../../dynamic-providers/fabric-edge/schema";
import { UNKNOWN } from "../../../lib/unknown";

const end = (alias: string, n: number) => ({ alias, sshHost: `10.0.0.${n}`, hostKey: "ssh-ed25519 AAAA", fabricInterface: "fab0", fabricAddress: `10.0.1.${n}` });
const login = { host: "10.0.0.1", port: 22, user: "root", connectTimeoutS: 10, maxSessions: 4 };
const good: FabricEdgeInputs = {
  stack: "s",
  edgeId: "a->b",
  source: end("a", 11),
  destination: end("b", 12),
  transport: "tcp",
  tool: { durationS: 2, streams: 1 },
  iperfPort: 5201,
  sourceLogin: login,
  destinationLogin: login,
  requiredGbps: 0.9,
  budget: { governingEngine: "e1", budgetKey: "k", formula: "f" },
  lockWaitS: 60,
};

describe("fabric edge inputs", () => {
  it("accepts a well-formed edge", () => {
    expect(edgeInputProblems(good)).to.deep.equal([]);
  });

  it("names each bad field and the edge's own consistency", () => {
    const bad = {
      ...good,
      edgeId: "a->c",
      destination: { ...end("b", 12), fabricInterface: "no such if!", fabricAddress: "b.fabric" },
      tool: { durationS: 0, streams: 1 },
      iperfPort: 70000,
      lockWaitS: 0,
    };
    expect(edgeInputProblems(bad).map(([k]) => k)).to.deep.equal(["destination", "edgeId", "tool", "iperfPort", "lockWaitS"]);
    expect(edgeInputProblems(bad)[0][1]).to.match(/^destination fabricInterface "no such if!" is not an interface name; fabricAddress "b\.fabric": /);
    expect(edgeInputProblems({ ...good, edgeId: "a->a", destination: end("a", 12) })).to.deep.equal([
      ["edgeId", "edge a->a joins a host to itself: traffic inside one host is not a fabric edge"],
    ]);
  });

  it("does not judge what preview cannot know yet", () => {
    expect(edgeInputProblems({ ...good, source: UNKNOWN as never, destination: { ...end("b", 12), fabricAddress: UNKNOWN }, edgeId: "x" })).to.deep.equal([]);
  });
});

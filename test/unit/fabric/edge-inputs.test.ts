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
  engines: [
    { engineId: "e1", side: "source", url: "http://10.0.1.11:8100" },
    { engineId: "e2", side: "destination", url: "http://[fd00::12]:8100" },
  ],
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

  it("names each engine on the edge's hosts by its id and field, and refuses one listed twice", () => {
    const engines = [
      { engineId: "e1", side: "both", url: "http://10.0.1.11:8100" },
      { engineId: "e2", side: "destination", url: "https://10.0.1.12:8100" },
      { engineId: "e3", side: "source", url: 8100 },
      { engineId: "e1", side: "source", url: "http://10.0.1.11:8101" },
    ];
    expect(edgeInputProblems({ ...good, engines: engines as never })).to.deep.equal([
      ["engines", 'engines[e1].side must be "source" or "destination", got "both"'],
      ["engines", 'engines[e2].url must be the engine\'s http base URL (its /metrics is read through the host\'s SSH login, which carries plain http), got "https://10.0.1.12:8100"'],
      ["engines", "engines[e3].url must be the engine's http base URL, got 8100"],
      ["engines", "engines lists e1 more than once: an engine runs on one host"],
    ]);
    expect(edgeInputProblems({ ...good, engines: undefined as never })).to.deep.equal([
      ["engines", "engines must list the engines on the edge's two hosts (empty when there are none), got undefined"],
    ]);
    expect(edgeInputProblems({ ...good, engines: [] })).to.deep.equal([]);
  });

  it("does not judge engine URLs a preview cannot know yet", () => {
    expect(edgeInputProblems({ ...good, engines: [{ engineId: "e1", side: "source", url: UNKNOWN }] })).to.deep.equal([]);
    expect(edgeInputProblems({ ...good, engines: UNKNOWN as never })).to.deep.equal([]);
  });
});

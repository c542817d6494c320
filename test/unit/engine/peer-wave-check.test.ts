/** The PeerWave's input check, as its check method runs it: the members named, and a preview's unknowns left for the up. */
import { expect } from "chai";
import { provider } from "../../../dynamic-providers/peer-wave/provider";
import { UNKNOWN } from "../../../lib/unknown";

const member = (engineId: string) => ({ engineId, hostAlias: "h1", url: "http://198.18.0.11:8101", processIdentity: { hostAlias: "h1", pid: 10 }, restartScript: "true", login: { host: "198.18.0.11", port: 22, user: "narwhal" } });
const inputs = (members: unknown) => ({ members, credentials: {}, restartTimeoutS: 120 });

describe("peer wave provider: the input check", () => {
  it("passes a wave of distinct engines on as it is", async () => {
    const news = inputs([member("e1"), member("e2")]);
    expect(await provider.check!({}, news)).to.deep.equal({ inputs: news });
  });

  it("refuses a wave of one engine, and engine ids that repeat, naming members", async () => {
    expect((await provider.check!({}, inputs([member("e1")]))).failures).to.deep.equal([{ property: "members", reason: "a peer wave needs at least two engines" }]);
    expect((await provider.check!({}, inputs([member("e1"), member("e2"), member("e1")]))).failures).to.deep.equal([{ property: "members", reason: "engine ids repeat: e1, e2, e1" }]);
  });

  it("leaves members a preview does not know yet to the up", async () => {
    for (const members of [UNKNOWN, [member("e1"), { ...member("e1"), processIdentity: UNKNOWN }]]) {
      const news = inputs(members);
      expect(await provider.check!({}, news)).to.deep.equal({ inputs: news });
    }
  });
});

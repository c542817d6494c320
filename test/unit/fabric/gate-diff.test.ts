import { expect } from "chai";
import { provider } from "../../../dynamic-providers/fabric-gate/provider";

describe("fabric gate: what a change does to the decision", () => {
  const edge = { id: "sim1->sim2", requiredGbps: 10, evidence: { relativePath: "fabric/a.json", digest: "sha256:a" } };
  const olds = { stack: "dev", hosts: ["sim1", "sim2"], edges: [edge], matrix: {}, evidence: { relativePath: "fabric/m.json", digest: "sha256:m" } };
  const news = { stack: "dev", hosts: ["sim1", "sim2"], edges: [edge] };

  it("is no change while the hosts and the edges' records are the ones judged", async () => {
    expect(await provider.diff!("x", olds, news)).to.deep.equal({ changes: false, replaces: [], deleteBeforeReplace: false });
  });

  it("re-judges in place, never replaces, for another edge record, host list or stack", async () => {
    for (const change of [{ edges: [{ ...edge, requiredGbps: 20 }] }, { hosts: ["sim2", "sim1"] }, { stack: "prod" }]) {
      expect(await provider.diff!("x", olds, { ...news, ...change })).to.deep.equal({ changes: true, replaces: [], deleteBeforeReplace: false });
    }
  });
});

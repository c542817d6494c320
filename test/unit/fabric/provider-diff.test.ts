import { expect } from "chai";
import { UNKNOWN } from "../../../lib/unknown";
import { provider } from "../../../dynamic-providers/fabric-edge/provider";

/** Only what diff reads: the inputs, and the path digests measured and seen by a refresh. */
const source = { alias: "sim1", fabricAddress: "10.88.0.11", hostKey: "ssh-ed25519 AAAA1" };
const destination = { alias: "sim2", fabricAddress: "10.88.0.12", hostKey: "ssh-ed25519 AAAA2" };
const inputs = { edgeId: "sim1->sim2", source, destination, transport: "tcp", tool: { durationS: 5, streams: 4 }, stack: "dev", iperfPort: 5201, requiredGbps: 10, budget: { minGbps: 10 } };
const olds = { ...inputs, measured: { forward: "sha256:f", back: "sha256:b" }, observed: { forward: "sha256:f", back: "sha256:b" } };

describe("fabric edge: what a change does to the measurement", () => {
  it("is no change when nothing listed changed and the path is as measured", async () => {
    expect(await provider.diff!("x", olds, inputs)).to.deep.equal({ changes: false, replaces: [], deleteBeforeReplace: false });
  });

  it("updates in place for another port or budget", async () => {
    expect(await provider.diff!("x", olds, { ...inputs, iperfPort: 5202 })).to.deep.equal({ changes: true, replaces: [], deleteBeforeReplace: false });
    expect(await provider.diff!("x", olds, { ...inputs, requiredGbps: 20 })).to.deep.equal({ changes: true, replaces: [], deleteBeforeReplace: false });
  });

  it("replaces with the measured-against inputs first, then the path directions a refresh saw move", async () => {
    const moved = { ...olds, observed: { forward: "sha256:f", back: "sha256:x" } };
    const d = await provider.diff!("x", moved, { ...inputs, transport: "udp", destination: { ...destination, fabricAddress: "10.88.0.13" } });
    expect(d).to.deep.equal({ changes: true, replaces: ["destination", "transport", "back"], deleteBeforeReplace: false });
  });

  it("reads an address or host key a preview does not know yet as the one measured, and an unknown budget as the old one", async () => {
    const news = { ...inputs, requiredGbps: UNKNOWN, source: { ...source, fabricAddress: UNKNOWN, hostKey: UNKNOWN }, destination: { ...destination, fabricAddress: UNKNOWN, fabricAddressChoice: "10.88.0.12" } };
    expect(await provider.diff!("x", olds, news)).to.deep.equal({ changes: false, replaces: [], deleteBeforeReplace: false });
  });

  it("updates in place, never re-measures, when the engines on its hosts are given to an edge measured without them, or change", async () => {
    const engines = [{ engineId: "e1", side: "source", url: "http://10.88.0.11:8100" }];
    expect(await provider.diff!("x", olds, { ...inputs, engines })).to.deep.equal({ changes: true, replaces: [], deleteBeforeReplace: false });
    const withEngines = { ...olds, engines };
    expect(await provider.diff!("x", withEngines, { ...inputs, engines })).to.deep.equal({ changes: false, replaces: [], deleteBeforeReplace: false });
    expect(await provider.diff!("x", withEngines, { ...inputs, engines: [...engines, { engineId: "e2", side: "destination", url: "http://10.88.0.12:8100" }] })).to.deep.equal({
      changes: true,
      replaces: [],
      deleteBeforeReplace: false,
    });
    // A preview that re-takes a host's discovery cannot know its engines' URLs: read as the ones kept.
    expect(await provider.diff!("x", withEngines, { ...inputs, engines: [{ ...engines[0], url: UNKNOWN }] })).to.deep.equal({ changes: false, replaces: [], deleteBeforeReplace: false });
  });

  it("keeps the measurement and its reservation on an update of the engines", async () => {
    const measured = { ...olds, measurement: { gbps: 20, samplesGbps: [20], retransmits: 0 }, reservation: { idle: true, reasons: [], foreign: {} } };
    const engines = [{ engineId: "e1", side: "source", url: "http://10.88.0.11:8100" }];
    const { outs } = await provider.update!("x", measured, { ...inputs, engines });
    expect(outs).to.deep.include({ engines, measurement: measured.measurement, reservation: measured.reservation });
  });
});

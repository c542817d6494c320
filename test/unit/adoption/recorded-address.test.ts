/**
 * The preview's forecast and the up take a host's fabric address by one rule (discoveredFabricAddress):
 * once the stack has recorded an address, it stands while it is still on the interface, even beside a
 * new one, so a new engine on a known host is planned on the address its neighbours use.
 */
import { expect } from "chai";
import * as fs from "node:fs";
import * as path from "node:path";
import { parseFleetConfig } from "../../../lib/config/parse";
import { discoveredFabricAddress } from "../../../lib/discovery/fabric-address";
import { parseProbe } from "../../../lib/discovery/probe";
import { discoveredFromProbe, previewProbeOptions } from "../../../lib/adoption/preview-reads";
import { fleetConfig } from "../../mocks/support/fleet";

const SIM2 = fs.readFileSync(path.join(__dirname, "..", "discovery", "fixtures", "sim2-probe.txt"), "utf8");
/** The same host after a second global address appeared on fab0. */
const TWO_ADDRESSES = SIM2.replace(
  "2: fab0    inet 198.18.0.12/24 scope global fab0\\       valid_lft forever preferred_lft forever",
  "2: fab0    inet 198.18.0.12/24 scope global fab0\\       valid_lft forever preferred_lft forever\n2: fab0    inet 198.18.0.99/24 scope global secondary fab0\\       valid_lft forever preferred_lft forever",
);

describe("adoption forecast: the fabric address the stack recorded", () => {
  const spec = parseFleetConfig(fleetConfig({ model: { servedName: "tiny", checkpointDir: "/models/tiny-llama" } }));
  const host = spec.hosts[0];
  const opts = previewProbeOptions(spec, host);

  it("the fixture now shows two addresses", () => {
    expect(parseProbe(TWO_ADDRESSES, opts).fabric.addresses).to.deep.equal(["198.18.0.12", "198.18.0.99"]);
  });

  it("keeps the recorded address beside a new one, as the up's discovery does", () => {
    const up = discoveredFabricAddress(host.alias, host.fabricInterface, ["198.18.0.12", "198.18.0.99"], host.fabricAddress, "198.18.0.12");
    expect(discoveredFromProbe(host, TWO_ADDRESSES, opts, "198.18.0.12").fabricAddress).to.equal(up).and.equal("198.18.0.12");
  });

  it("without a record, asks for a choice among several, as a first discovery does", () => {
    expect(() => discoveredFromProbe(host, TWO_ADDRESSES, opts)).to.throw(/198\.18\.0\.99/);
  });

  it("a recorded address gone from the interface is unresolved on both sides", () => {
    const forecast = discoveredFromProbe(host, SIM2, opts, "198.18.0.50").fabricAddress;
    expect(forecast).to.equal(discoveredFabricAddress(host.alias, host.fabricInterface, ["198.18.0.12"], undefined, "198.18.0.50")).and.match(/^unresolved: /);
  });
});

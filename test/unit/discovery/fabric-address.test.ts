import { expect } from "chai";
import { chooseFabricAddress, parseGlobalAddresses } from "../../../lib/discovery/fabric-address";

const ONE = "3: fab0    inet 198.18.0.11/24 brd 198.18.0.255 scope global fab0\\       valid_lft forever preferred_lft forever\n";
const TWO = ONE + "3: fab0    inet6 2001:db8::11/64 scope global \\       valid_lft forever preferred_lft forever\n";

describe("discovery: fabric address", () => {
  it("parses IPv4 and IPv6 global addresses", () => {
    expect(parseGlobalAddresses(TWO)).to.deep.equal(["198.18.0.11", "2001:db8::11"]);
  });
  it("takes the unique address", () => {
    expect(chooseFabricAddress("a", "fab0", parseGlobalAddresses(ONE))).to.equal("198.18.0.11");
  });
  it("refuses an interface without a global address", () => {
    expect(() => chooseFabricAddress("a", "fab0", [])).to.throw(
      "host a: fabric interface fab0 has no global address; check hosts[].fabricInterface or bring the interface up",
    );
  });
  it("asks for a choice when there are several", () => {
    expect(() => chooseFabricAddress("a", "fab0", ["198.18.0.11", "2001:db8::11"])).to.throw(
      "host a: fabric interface fab0 has several global addresses (198.18.0.11, 2001:db8::11); choose one with hosts[].fabricAddress",
    );
  });
  it("honours an explicit choice only if the interface has it", () => {
    expect(chooseFabricAddress("a", "fab0", ["198.18.0.11", "2001:db8::11"], "2001:db8::11")).to.equal("2001:db8::11");
    expect(() => chooseFabricAddress("a", "fab0", ["198.18.0.11"], "198.18.0.99")).to.throw(
      "host a: hosts[].fabricAddress 198.18.0.99 is not a global address on fab0 (found: 198.18.0.11)",
    );
  });
});

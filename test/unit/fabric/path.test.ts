import { expect } from "chai";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { FabricError } from "../../../lib/fabric/errors";
import { parsePathObservation, pathFingerprint, pathObservationScript, type PathEnd } from "../../../lib/fabric/path";

const fixture = (name: string) => readFileSync(join(__dirname, "fixtures", name), "utf8");
const sim6: PathEnd = { host: "sim6", interface: "fab0", address: "198.18.0.16" };
const sim7 = { host: "sim7", address: "198.18.0.17" };

describe("fabric path observation", () => {
  it("quotes what it is given and only reads", () => {
    const script = pathObservationScript({ host: "h", interface: "fab0", address: "10.0.0.1" }, "10.0.0.2");
    expect(script).to.include("cat /sys/class/net/'fab0'/mtu").and.include("ip route get '10.0.0.2' from '10.0.0.1'");
    expect(script).to.not.match(/\b(add|del|replace|change|flush)\b/);
  });

  it("reads MTU, global addresses, the route and the route files from a simulated host's output", () => {
    const seen = parsePathObservation("sim6", fixture("path-sim6.txt"));
    expect(seen.mtu).to.equal(1500);
    expect(seen.addresses).to.deep.equal(["198.18.0.16"]);
    expect(seen.route).to.deep.equal({ text: "198.18.0.17 from 198.18.0.16 dev fab0 uid 0 \n    cache", exitStatus: 0 });
    expect(seen.routeFiles.routes4).to.include("198.18.0.0/24 dev fab0 proto kernel scope link src 198.18.0.16");
    expect(seen.routeFiles.rules4).to.include("32766:\tfrom all lookup main");
    expect(Object.keys(seen.routeFiles)).to.deep.equal(["routes4", "routes6", "rules4", "rules6"]);
  });

  it("fingerprints the fabric path, and a route with its own MTU as another path", () => {
    const plain = pathFingerprint("tcp", sim6, sim7, parsePathObservation("sim6", fixture("path-sim6.txt")));
    const mtu = pathFingerprint("tcp", sim6, sim7, parsePathObservation("sim6", fixture("path-sim6-route-mtu.txt")));
    expect(plain.ok && mtu.ok).to.equal(true);
    if (!plain.ok || !mtu.ok) return;
    expect(plain.problems).to.deep.equal([]);
    expect(plain.fingerprint).to.deep.include({ mtu: 1500, source: { host: "sim6", interface: "fab0", address: "198.18.0.16" } });
    expect(mtu.fingerprint.route.mtu).to.equal(1400);
    expect(mtu.digest).to.not.equal(plain.digest);
    // The same observation twice is the same digest: only a change of the path moves it.
    expect(pathFingerprint("tcp", sim6, sim7, parsePathObservation("sim6", fixture("path-sim6.txt"))).digest).to.equal(plain.digest);
  });

  it("says why a side cannot be fingerprinted, with a digest no real path has", () => {
    const seen = parsePathObservation("sim6", fixture("path-sim6-no-interface.txt"));
    expect(seen.mtu).to.equal(null);
    const r = pathFingerprint("tcp", { ...sim6, interface: "fab9" }, sim7, seen);
    expect(r.ok).to.equal(false);
    if (r.ok) return;
    expect(r.reason).to.equal(
      "host sim6, path to sim7: interface fab9 has no readable MTU (is it there?); address 198.18.0.16 is not on fab9 (it holds no global address)",
    );
    expect(r.digest).to.match(/^sha256:[0-9a-f]{64}$/);
    const moved = pathFingerprint("tcp", { ...sim6, address: "198.18.0.26" }, sim7, parsePathObservation("sim6", fixture("path-sim6.txt")));
    expect(moved.ok ? "" : moved.reason).to.include("address 198.18.0.26 is not on fab0 (it holds 198.18.0.16)");
  });

  it("reports a route that leaves by another interface as a problem of the path", () => {
    const text = fixture("path-sim6.txt").replace("198.18.0.17 from 198.18.0.16 dev fab0 uid 0", "198.18.0.17 from 198.18.0.16 via 10.0.0.1 dev eth0 uid 0");
    const r = pathFingerprint("tcp", sim6, sim7, parsePathObservation("sim6", text));
    expect(r.ok && r.problems).to.deep.equal(["the route leaves by eth0, not the fabric interface fab0"]);
  });

  it("refuses output with a section missing", () => {
    let e: FabricError | undefined;
    try {
      parsePathObservation("sim6", fixture("path-sim6.txt").split("@@narwhal-fabric-path routes4")[0]);
    } catch (err) {
      e = err as FabricError;
    }
    expect(e?.code).to.equal("NARWHAL_FABRIC_PATH");
    expect(e?.message).to.equal("host sim6: the path observation printed no routes4, routes6, rules4, rules6 section");
  });
});

import { expect } from "chai";
import { provider } from "../../../dynamic-providers/host-discovery/provider";

/** Only what diff reads: the inputs, the fabric address in use and the facets measured and seen by a refresh. */
const inputs = { host: "10.77.0.11", port: 22, user: "ubuntu", fabricInterface: "fab0", modelDir: "/srv/m", stack: "dev", connectTimeoutS: 10 };
const olds = { ...inputs, fabricAddress: "10.88.0.11", measured: { hardware: "sha256:a", fabric: "sha256:b" }, observed: { hardware: "sha256:a", fabric: "sha256:b" } };

describe("host discovery: what a change does to the observation", () => {
  it("is no change when nothing listed changed and the host looks as measured", async () => {
    expect(await provider.diff!("x", olds, inputs)).to.deep.equal({ changes: false, replaces: [], deleteBeforeReplace: false });
  });

  it("updates in place for a login setting", async () => {
    expect(await provider.diff!("x", olds, { ...inputs, connectTimeoutS: 30 })).to.deep.equal({ changes: true, replaces: [], deleteBeforeReplace: false });
  });

  it("replaces with the measured-against inputs first, then a readdressed fabric, then the facets a refresh saw move", async () => {
    const moved = { ...olds, observed: { hardware: "sha256:a", fabric: "sha256:c" } };
    const d = await provider.diff!("x", moved, { ...inputs, modelDir: "/srv/n", host: "10.77.0.12", fabricAddressChoice: "10.88.0.12" });
    expect(d).to.deep.equal({ changes: true, replaces: ["host", "modelDir", "fabricAddressChoice", "fabric"], deleteBeforeReplace: false });
  });

  it("keeps a fabric address choice that names the address in use", async () => {
    expect(await provider.diff!("x", olds, { ...inputs, fabricAddressChoice: "10.88.0.11" })).to.deep.equal({ changes: false, replaces: [], deleteBeforeReplace: false });
  });
});

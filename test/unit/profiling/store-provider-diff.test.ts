import { expect } from "chai";
import { provider } from "../../../dynamic-providers/profile-store/provider";

describe("profile store: a change rewrites the files in place", () => {
  const olds = { stack: "dev", path: "/etc/narwhal/profiles.json", engineIds: ["e1"], model: "m", sweep: {}, profiles: [], storeDigest: "sha256:00" };

  it("is no change when no input changed, whatever the outputs hold", async () => {
    expect(await provider.diff!("x", olds, { ...olds, storeDigest: undefined })).to.deep.equal({ changes: false, replaces: [], deleteBeforeReplace: false });
  });

  it("updates, never replaces, for a new path, fleet or profile", async () => {
    for (const news of [{ path: "/srv/profiles.json" }, { engineIds: ["e1", "e2"] }, { profiles: [{ engineId: "e1" }] }]) {
      expect(await provider.diff!("x", olds, { ...olds, ...news })).to.deep.equal({ changes: true, replaces: [], deleteBeforeReplace: false });
    }
  });

  it("refuses a relative path before anything is written, naming the field", async () => {
    const r = await provider.check!({}, { ...olds, path: "profiles.json" });
    expect(r.failures).to.deep.include({ property: "path", reason: 'path must be an absolute path on the router host without "..", got "profiles.json"' });
  });
});

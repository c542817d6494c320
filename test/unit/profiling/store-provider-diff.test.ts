import { expect } from "chai";
import { provider } from "../../../dynamic-providers/profile-store/provider";
import { UNKNOWN } from "../../../lib/unknown";

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

  it("refuses a path that climbs or is no string in the same words", async () => {
    for (const path of ["/etc/../profiles.json", 7]) {
      const r = await provider.check!({}, { ...olds, path, engineIds: [] });
      expect(r.failures).to.deep.equal([{ property: "path", reason: `path must be an absolute path on the router host without "..", got ${JSON.stringify(path)}` }]);
    }
  });

  it("judges the profiles against the fleet even when the path is refused", async () => {
    const r = await provider.check!({}, { ...olds, path: "profiles.json", engineIds: ["e1", "e2"] });
    expect(r.failures!.map((f) => f.property)).to.deep.equal(["path", "profiles"]);
    expect(r.failures![1].reason).to.contain("missing e1, e2");
  });

  it("refuses missing lists by name instead of failing inside the rule that compares them", async () => {
    const { profiles: _p, ...withoutProfiles } = olds as Record<string, unknown>;
    const r = await provider.check!({}, { ...withoutProfiles, engineIds: "e1" });
    expect(r.failures).to.deep.equal([
      { property: "profiles", reason: "profiles must be a list, got undefined" },
      { property: "engineIds", reason: 'engineIds must be a list, got "e1"' },
    ]);
  });

  it("lets a path only known after apply through a preview", async () => {
    expect((await provider.check!({}, { ...olds, path: UNKNOWN, engineIds: [] })).failures ?? []).to.deep.equal([]);
  });
});

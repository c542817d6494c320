import { expect } from "chai";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { configuredHost, setConfiguredHosts } from "../../../lib/ssh/configured-hosts";
import { currentHostsConfig } from "../../../lib/ssh/stack-config-file";

describe("host keys pinned in the stack's config now", () => {
  after(() => setConfiguredHosts(undefined));

  it("reads each alias's index and pinned key from Pulumi.<stack>.yaml as it is now", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "narwhal-pins-"));
    try {
      const file = path.join(dir, "Pulumi.st.yaml");
      const write = (hosts: unknown[]) => fs.writeFileSync(file, JSON.stringify({ config: { "narwhal-fleet:hosts": hosts } }));
      write([{ alias: "a", destination: "root@h1" }, { alias: "b", destination: "root@h2" }]);
      setConfiguredHosts(currentHostsConfig(dir, "st"));
      expect(configuredHost("b")).to.deep.equal({ index: 1 });
      // The operator pins b's new key with `pulumi config set --path 'hosts[1].hostKey'`: the next call sees it.
      write([{ alias: "a", destination: "root@h1" }, { alias: "b", destination: "root@h2", hostKey: "ssh-ed25519 AAAAnew" }, { alias: "c" }]);
      setConfiguredHosts(currentHostsConfig(dir, "st"));
      expect(configuredHost("b")).to.deep.equal({ index: 1, hostKey: "ssh-ed25519 AAAAnew" });
      expect(configuredHost("c")).to.deep.equal({ index: 2 });
      expect(currentHostsConfig(dir, "other")).to.equal(undefined);
      expect(currentHostsConfig(dir, "../st")).to.equal(undefined);
      // `pulumi config set hosts '[…]'` (no --path) stores the list as JSON text: read alike, and kept whole
      // for the pin command, which must not replace that text with a list of the key alone.
      fs.writeFileSync(file, JSON.stringify({ config: { "narwhal-fleet:hosts": JSON.stringify([{ alias: "a" }, { alias: "b", hostKey: "ssh-ed25519 AAAAtext" }]) } }));
      setConfiguredHosts(currentHostsConfig(dir, "st"));
      expect(configuredHost("b")).to.deep.equal({ index: 1, hostKey: "ssh-ed25519 AAAAtext", listAsText: [{ alias: "a" }, { alias: "b", hostKey: "ssh-ed25519 AAAAtext" }] });
      setConfiguredHosts("not json");
      expect(configuredHost("b")).to.equal(undefined);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

/**
 * ROCm devices read from the host, not assumed, against simulated AMD host sim51 (mi300x:2): its
 * /sys/class/drm numbers the render nodes in reverse PCI order, as a kernel that probed the GPUs in
 * another order would, so discovery must give each GPU the node its PCI function links to; and the
 * discovery provider, Gate A's pre-launch check, refuses the host while /dev/kfd or a GPU's render node
 * is missing, naming host and device. Takes sim51 down at the end.
 */
import { expect } from "chai";
import { provider } from "../../dynamic-providers/host-discovery/provider";
import type { HostDiscoveryOutputs } from "../../dynamic-providers/host-discovery/schema";
import { runInHost, simDown, simUp, sshExec } from "../../sim/hosts";
import type { SimHost } from "../../sim/hosts";
import { discoveryFailure, discoveryInputs } from "./support/host-discovery";

const ALIAS = "sim51";

describe("providers: ROCm render nodes and /dev/kfd on an AMD host (sim51)", function () {
  this.timeout(180_000);
  let host: SimHost;

  before(async () => {
    [host] = (await simUp({ hosts: 51, aliases: [ALIAS], layouts: { [ALIAS]: "mi300x:2" } })).hosts as [SimHost];
  });
  after(async () => {
    if (host) await simDown({ aliases: [ALIAS] });
  });

  it("shows a DRM class tree whose render nodes link to the GPUs' PCI functions, not numbered 128+i", async () => {
    for (const g of host.gpus) {
      const linked = await sshExec(host, `readlink -f /sys/class/drm/renderD${g.renderMinor}/device`);
      expect(linked.stdout.trim()).to.equal(`/sys/bus/pci/devices/${g.pciAddress}`);
      expect((await sshExec(host, `test -c /dev/dri/renderD${g.renderMinor}`)).code).to.equal(0);
    }
    expect(host.gpus.map((g) => g.renderMinor)).to.deep.equal([129, 128]);
  });

  it("gives each GPU the render node of its PCI function, and passes with /dev/kfd and both nodes present", async () => {
    const o = (await provider.create(discoveryInputs(host))).outs as HostDiscoveryOutputs;
    expect(o.accelerators.gpus.map((g) => [g.index, g.renderNode])).to.deep.equal([
      [0, "/dev/dri/renderD129"],
      [1, "/dev/dri/renderD128"],
    ]);
  });

  it("refuses the host while /dev/kfd is missing, and then while GPU 1's render node is, naming host and device", async () => {
    await runInHost(ALIAS, ["rm", "/dev/kfd"]);
    try {
      expect(await discoveryFailure(provider.create(discoveryInputs(host)))).to.include("Restore the declared device exposure before launch. Missing on host sim51: /dev/kfd.");
    } finally {
      await runInHost(ALIAS, ["mknod", "-m", "0666", "/dev/kfd", "c", "1", "3"]);
    }
    await runInHost(ALIAS, ["rm", "/dev/dri/renderD128"]);
    try {
      expect(await discoveryFailure(provider.create(discoveryInputs(host)))).to.include("Restore the declared device exposure before launch. Missing on host sim51: /dev/dri/renderD128.");
    } finally {
      await runInHost(ALIAS, ["mknod", "-m", "0666", "/dev/dri/renderD128", "c", "1", "3"]);
    }
    expect(((await provider.create(discoveryInputs(host))).outs as HostDiscoveryOutputs).accelerators.vendor).to.equal("amd");
  });
});

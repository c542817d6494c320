import { expect } from "chai";
import { provider } from "../../dynamic-providers/host-discovery/provider";
import type { HostDiscoveryOutputs } from "../../dynamic-providers/host-discovery/schema";
import { NO_GPU_NOTICE } from "../../lib/discovery/accelerators";
import { stackFolder } from "../../lib/fleet/host-cleanup";
import { runInHost, simDown, simUp } from "../../sim/hosts";
import type { SimHost } from "../../sim/hosts";
import { discoveryFailure, discoveryInputs, discoveryRefusal } from "./support/host-discovery";
import { keptAttempt } from "../support/kept-attempt";

/** The discovery provider's own methods, called as the engine calls them, against simulated hosts. */
describe("providers: host discovery against the simulated hosts", function () {
  this.timeout(120_000);
  let hosts: Map<string, SimHost>;
  before(async () => {
    const fleet = await simUp({ hosts: 5, layouts: { sim5: "none" } });
    hosts = new Map(fleet.hosts.map((h) => [h.alias, h]));
  });
  // The GPU-less host exists for this file only: later tests expect the default fleet.
  after(async () => {
    await simDown({ aliases: ["sim4", "sim5"] });
  });

  it("records an NVIDIA host's GPUs, fabric address, model and checkpoint, with evidence", async () => {
    const { outs } = await provider.create(discoveryInputs(hosts.get("sim1")!));
    const o = outs as HostDiscoveryOutputs;
    expect(o.hostname).to.equal("sim1");
    expect(o.accelerators.vendor).to.equal("nvidia");
    expect(o.accelerators.gpus).to.have.length(2);
    expect(o.fabricAddress).to.equal("198.18.0.11");
    expect(o.model.architecture).to.equal("LlamaForCausalLM");
    expect(o.checkpoint.modelTreeSha256).to.match(/^[0-9a-f]{64}$/);
    expect(o.evidence.relativePath).to.match(/^discovery\/[0-9a-f]{64}\.json$/);
  });

  it("reads an AMD host through rocminfo", async () => {
    const { outs } = await provider.create(discoveryInputs(hosts.get("sim3")!));
    expect((outs as HostDiscoveryOutputs).accelerators).to.deep.include({ vendor: "amd", product: "AMD Instinct MI300X" });
  });

  it("says, in the runbook's words, when a host exposes no GPU", async () => {
    const { outs } = await provider.create(discoveryInputs(hosts.get("sim5")!));
    expect((outs as HostDiscoveryOutputs).accelerators).to.deep.include({ vendor: "none", notice: NO_GPU_NOTICE });
  });

  it("refuses a fabric interface with no global address, and asks for a choice among several", async () => {
    const h = hosts.get("sim2")!;
    const refused = await discoveryRefusal(provider.create(discoveryInputs(h, { fabricInterface: "lo" })));
    const reason = "host sim2, probe section fabric: fabric interface lo has no global address; check hosts[].fabricInterface or bring the interface up";
    expect(refused).to.include(reason);
    // The failed attempt is kept before the error is seen: the probe it ran, its exit status and what it printed.
    const { record, artifacts } = keptAttempt(refused, "provider-tests");
    expect(record).to.deep.include({ kind: "discovery", subject: { kind: "host", alias: "sim2" } });
    expect(record.verdict.status).to.equal("fail");
    expect(record.verdict.reasons).to.include(reason);
    expect(record.inputs.fabricInterface).to.equal("lo");
    expect(record.commands.map((c: { host: string; exitStatus: number }) => [c.host, c.exitStatus])).to.deep.equal([["sim2", 0]]);
    expect(artifacts["discovery-probe.txt"]).to.match(/fabric/);
    expect(JSON.stringify(record)).to.not.include("PRIVATE KEY");
    await runInHost(h.alias, ["ip", "addr", "add", "198.18.0.112/24", "dev", h.fabricInterface]);
    try {
      expect(await discoveryFailure(provider.create(discoveryInputs(h)))).to.include(
        "host sim2, probe section fabric: fabric interface fab0 has several global addresses (198.18.0.12, 198.18.0.112); choose one with hosts[].fabricAddress",
      );
      const { outs } = await provider.create(discoveryInputs(h, { fabricAddressChoice: "198.18.0.12" }));
      expect((outs as HostDiscoveryOutputs).fabricAddress).to.equal("198.18.0.12");
    } finally {
      await runInHost(h.alias, ["ip", "addr", "del", "198.18.0.112/24", "dev", h.fabricInterface]);
    }
  });

  it("on destroy removes the stack's folder from the host, and keeps it with hosts[].retainOnDestroy", async () => {
    const h = hosts.get("sim1")!;
    for (const retainOnDestroy of [true, false]) {
      const stack = `provider-destroy-${retainOnDestroy ? "kept" : "removed"}`;
      const inputs = discoveryInputs(h, { stack, retainOnDestroy });
      const folder = stackFolder(inputs.stateDir, stack);
      await runInHost(h.alias, ["rm", "-rf", folder]);
      const { outs } = await provider.create(inputs);
      // What the stack's engines and router leave in its folder.
      await runInHost(h.alias, ["sh", "-c", `mkdir -p ${folder}/engines/e1 ${folder}/router && echo log > ${folder}/engines/e1/engine.log`]);
      await provider.delete!("discovery", outs as HostDiscoveryOutputs);
      const left = (await runInHost(h.alias, ["sh", "-c", `ls -A ${folder} 2>/dev/null || echo '(gone)'`])).stdout.trim().split("\n");
      expect(left, `retainOnDestroy ${retainOnDestroy}`).to.deep.equal(retainOnDestroy ? ["engines", "router"] : ["(gone)"]);
      await runInHost(h.alias, ["rm", "-rf", folder]);
    }
  });

  it("refuses a host whose key is not the pinned one, before running anything", async () => {
    const [a, b] = [hosts.get("sim1")!, hosts.get("sim2")!];
    expect(await discoveryFailure(provider.create(discoveryInputs(a, { pinnedHostKey: b.hostKey })))).to.include(
      `host sim1: the SSH host key changed (pinned ${b.fingerprint}, presented ${a.fingerprint}); nothing was run on it.`,
    );
  });
});

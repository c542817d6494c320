/**
 * e2e: the operator's ways out of two failures, on one small stack of its own (sim13, two engines, the
 * router beside them): a re-keyed host converges by the steps its refusal prints, and `destroy` leaves no
 * file of the stack on the host (issue 22, items 5 and 6).
 */
import { expect } from "chai";
import type { Stack } from "@pulumi/pulumi/automation";
import { readHostKeyPair, restartSshdWithHostKey, restartSshdWithNewHostKey, runInHost, simUp } from "../../sim/hosts";
import type { HostKeyPair, SimHost } from "../../sim/hosts";
import { E2E_TIME_SCALE, EngineEntry, openStack, PROJECT_ROOT } from "./support/stack";
import { plannedChanges } from "./support/preview";
import { plannedRemeasure, remeasuredSince, snapshotEvidence } from "./support/remeasured";

const STACK = "e2e-failures";
const quiet = { onOutput: () => undefined };

/** Every path on the host that is the stack's or lies in the login's home and scratch folders, one a line. */
async function hostFiles(alias: string): Promise<string[]> {
  // /var/lib/narwhal-fleet is shared by every simulated host (and other stacks); the homes and /tmp are the host's own.
  const r = await runInHost(alias, ["sh", "-c", `ls -A /var/lib/narwhal-fleet | grep -x ${STACK}; find /root /home /tmp /var/tmp -xdev 2>/dev/null; find / -xdev \\( -path /proc -o -path /work -o -path /sys \\) -prune -o -name '*${STACK}*' -print 2>/dev/null; true`]);
  return r.stdout.split("\n").filter(Boolean).sort();
}

describe("e2e: failure paths an operator follows (re-keyed host, destroy)", function () {
  this.timeout(1_800_000);
  let host: SimHost;
  let stack: Stack;
  let original: HostKeyPair;
  /** What was on the host before the stack's first up: whatever else is there after its destroy, the stack left. */
  let beforeUp: string[];

  before(async () => {
    host = (await simUp({ hosts: 14, aliases: ["sim13", "sim14"], timeScale: E2E_TIME_SCALE })).hosts.find((h) => h.alias === "sim13")!;
    original = readHostKeyPair(host.alias);
    const engines: EngineEntry[] = [
      { id: "e1", host: host.alias, gpuIds: [0], port: 8931, attestationPort: 8941, nixlPort: 6031 },
      { id: "e2", host: host.alias, gpuIds: [1], port: 8932, attestationPort: 8942, nixlPort: 6032 },
    ];
    stack = await openStack(STACK, [host], engines, { router: { port: 8921 }, observability: { prometheusPort: 9921 } });
    await stack.destroy(quiet);
    beforeUp = await hostFiles(host.alias);
    await stack.up(quiet);
  });

  after(async () => {
    if (original) await restartSshdWithHostKey(host.alias, original);
  });

  it("converges after a host key change by the steps the refusal prints: pin, preview --refresh, up --refresh", async () => {
    const replaced = await restartSshdWithNewHostKey(host.alias);
    let refusal = "";
    await stack.preview({ refresh: true }).catch((err: Error) => (refusal = err.message));
    expect(refusal).to.include(`host ${host.alias}: the SSH host key changed`);
    const fix = /pulumi config set --path '([^']+)' '([^']+)'/.exec(refusal);
    expect(fix, refusal).to.not.equal(null);
    expect(fix![1]).to.equal("hosts[0].hostKey");
    expect(fix![2]).to.equal(replaced.hostKey);
    // The printed command, as the Automation API says it (the key is in this project's namespace).
    await stack.setConfig(`narwhal-fleet:${fix![1]}`, { value: fix![2]! }, true);

    const steps = await plannedChanges(stack, { refresh: true });
    const snapshot = await snapshotEvidence(stack);
    await stack.up({ refresh: true, ...quiet });
    // What the up measured again is exactly what the preview said it would replace.
    expect(await remeasuredSince(snapshot)).to.deep.equal(plannedRemeasure(steps, snapshot));
    expect([...(await plannedChanges(stack, { refresh: true })).keys()]).to.deep.equal([]);
  });

  it("destroy leaves no file of the stack on the host; local evidence stays", async () => {
    const during = await hostFiles(host.alias);
    expect(during, "the stack's folder while it is deployed").to.include(STACK);
    await stack.destroy(quiet);
    expect(await hostFiles(host.alias)).to.deep.equal(beforeUp);
    const { EvidenceStore, evidenceRoot } = await import("../../lib/evidence");
    expect((await new EvidenceStore(evidenceRoot(PROJECT_ROOT, STACK)).list()).length).to.be.greaterThan(0);
  });
});

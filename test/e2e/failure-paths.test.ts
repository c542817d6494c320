/**
 * e2e: the operator's ways out of failures, on one small stack of its own (sim13, two engines, the router
 * beside them): a re-keyed host converges by the steps its refusal prints; a read-only evidence store is
 * refused in one line and the next up converges; `destroy` leaves no file or listener of the stack on the
 * host (issue 22, items 4b, 5 and 6). That `hosts[].retainOnDestroy` keeps the folder is shown a layer
 * down: the config reaching each discovery (test/mocks/discovery.test.ts) and the discovery's delete on a
 * simulated host (test/providers/host-discovery.test.ts).
 */
import { expect } from "chai";
import { execFileSync } from "node:child_process";
import type { Stack } from "@pulumi/pulumi/automation";
import { readHostKeyPair, restartSshdWithHostKey, restartSshdWithNewHostKey, runInHost, simUp, spawnInHost } from "../../sim/hosts";
import type { HostKeyPair, SimHost } from "../../sim/hosts";
import { E2E_TIME_SCALE, EngineEntry, openStack, PROJECT_ROOT, setObjectConfig } from "./support/stack";
import { appliedChanges, expectNothingPlanned, plannedChanges, stepList } from "./support/preview";
import { evidenceRoot } from "../../lib/evidence/store";
import { hostFiles } from "./support/host-leftovers";

const STACK = "e2e-failures";
const quiet = { onOutput: () => undefined };

/** Bounded wait (20 s, far beyond python's start on a loaded machine) for a listener on the host. */
async function waitForListener(alias: string, port: number): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if ((await runInHost(alias, ["sh", "-c", `ss -Hltn 'sport = :${port}'`])).stdout.trim()) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`nothing listened on ${alias}:${port} within 20 s`);
}

describe("e2e: failure paths an operator follows (re-keyed host, unwritable evidence, destroy)", function () {
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
    // restartKvPeers as it defaults: the two engines are each other's KV peers, and a re-keyed host is rotated under both.
    stack = await openStack(STACK, [host], engines, { router: { port: 8921 }, observability: { prometheusPort: 9921 }, runtime: { restartKvPeers: true } });
    await stack.destroy(quiet);
    // An earlier run may have kept the folder on purpose (retainOnDestroy) or been cut short.
    await runInHost(host.alias, ["rm", "-rf", `/var/lib/narwhal-fleet/${STACK}`]);
    beforeUp = await hostFiles(host.alias, STACK);
    await stack.up(quiet);
  });

  after(async () => {
    // A test cut short leaves resources pinned to the rotated key: they go while that key is still served,
    // so the next run does not meet a stack it cannot log in to. Then the host gets its own key back.
    await stack?.destroy(quiet).catch(() => undefined);
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
    await stack.setConfig(`narwhal-fleet:${fix![1]}`, { value: fix![2] }, true);

    // The refresh now logs in with the new pin. A new key on the same host re-measures nothing
    // (docs/operating.md): the host's discovery stands, no evidence is planned again, and the up takes
    // exactly the steps the preview named, on this host that also runs the router and its monitoring.
    const planned = await plannedChanges(stack, { refresh: true });
    expect(planned.get(`fleet-${host.alias}`)?.op, "the host's discovery").to.equal(undefined);
    const evidence = /-(generation|cache|image-check)$|^fleet-attestation-e\d+$|^fleet-profiles-e\d+$|^fleet-preflight$/;
    expect([...planned.values()].filter((s) => s.op === "replace" && evidence.test(s.name)).map((s) => s.name), "evidence re-measured").to.deep.equal([]);
    const applied = await appliedChanges(stack, { refresh: true });
    expect(stepList(applied), "the steps up --refresh took").to.deep.equal(stepList(planned));
    expect(stepList(await plannedChanges(stack, { refresh: true }))).to.deep.equal([]);
  });

  it("refuses in one line when the evidence store cannot be written, records nothing, and the next up converges", async () => {
    const root = evidenceRoot(PROJECT_ROOT, STACK);
    // Tests run as root, whom a chmod does not stop: the store goes read-only as a bind mount.
    execFileSync("sh", ["-c", `mount --bind '${root}' '${root}' && mount -o remount,bind,ro '${root}'`]);
    let message = "";
    try {
      // An SLO edit replaces the preflight (design section 4), whose new record cannot be written.
      await setObjectConfig(stack, "slo", { ttftS: 3 });
      await stack.up(quiet).catch((err: Error) => (message = err.message));
    } finally {
      execFileSync("umount", [root]);
    }
    expect(message).to.include(`evidence store ${root} refuses writes: the file system is read-only (EROFS); nothing was recorded as measured.`);
    expect(message).to.not.match(/UNAVAILABLE|\.tmp-|\n\s+at /);
    // Nothing was recorded as done: the preview still plans that measurement, and one up takes it.
    expect((await plannedChanges(stack)).get("fleet-preflight")?.op).to.equal("replace");
    await stack.up(quiet);
    await expectNothingPlanned(stack, { refresh: true });
  });

  it("refuses a router port another process holds with one first line (host, port, owner, fix); the serving router keeps serving", async () => {
    const squatter = spawnInHost(host.alias, ["python3", "-m", "http.server", "8924", "--bind", "0.0.0.0"]);
    try {
      await waitForListener(host.alias, 8924);
      await stack.setConfig("narwhal-fleet:router.port", { value: "8924" }, true);
      let message = "";
      await stack.up(quiet).catch((err: Error) => (message = err.message));
      // The engine prints a resource's error as "error: <its first line>"; the start script is not quoted.
      expect(message).to.match(/\n\s+error: router: port 8924 on host sim13 is taken by pid \d+ \(\S*python3\S* -m http\.server 8924 --bind 0\.0\.0\.0\); stop that process or set router\.port to a free port, then run pulumi up again\n/);
      expect(message).to.not.include('mkdir -p "$run" && chmod 700 "$run"');
      // The refusal came before the serving router was stopped for its replacement: it still answers.
      const health = await runInHost(host.alias, ["sh", "-c", "curl -fsS --max-time 5 http://127.0.0.1:8921/health"]);
      expect(health.stdout).to.include('"status":"ok"');
      // Its health check still probes the port it serves: a refresh finds it serving, so nothing calls it down.
      const steps = await plannedChanges(stack, { refresh: true });
      expect(steps.get("fleet-router-host-router-liveness")?.keys ?? [], "the router's liveness").to.not.include("serving");
    } finally {
      squatter.kill();
      await stack.removeConfig("narwhal-fleet:router.port", true);
    }
    await stack.up(quiet);
    await expectNothingPlanned(stack, { refresh: true });
  });

  it("destroy leaves no file of the stack on the host; local evidence stays", async () => {
    const during = await hostFiles(host.alias, STACK);
    expect(during, "the stack's folder while it is deployed").to.include(STACK);
    await stack.destroy(quiet);
    const after = await hostFiles(host.alias, STACK);
    expect(after).to.not.include(STACK);
    expect(after).to.deep.equal(beforeUp);
    // Nor a listener: engines, sidecars, NIXL, router and Prometheus all stopped.
    const ports = [8921, 9921, 8931, 8932, 8941, 8942, 6031, 6032];
    const listening = await runInHost(host.alias, ["sh", "-c", `ss -Hltn | awk '{print $4}' | grep -E ':(${ports.join("|")})$' || true`]);
    expect(listening.stdout.trim()).to.equal("");
    const { EvidenceStore } = await import("../../lib/evidence/store");
    expect((await new EvidenceStore(evidenceRoot(PROJECT_ROOT, STACK)).list()).length).to.be.greaterThan(0);
  });
});

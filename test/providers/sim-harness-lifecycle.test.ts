/**
 * `sim down` removes everything and `sim up` is idempotent, through the CLI as a user runs it.
 * Needs root. Takes the shared fleet down once and brings the same hosts back up (same host keys), so
 * other provider test files may run before or after this one, but not at the same time.
 */
import { expect } from "chai";
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { promisify } from "node:util";
import { constants, simFleet, simStatus, simUp, sshExec } from "../../sim/hosts";
import type { SimFleet, SimHost } from "../../sim/hosts";
import { modelsMountPointMarker } from "../../sim/hosts/paths";

const exec = promisify(execFile);
const ROOT = constants.PROJECT_ROOT;

/** `npm run sim -- <args>` without npm's banner. */
async function simCli(...args: string[]): Promise<string> {
  const { stdout } = await exec("bash", ["scripts/with-tools.sh", "node", "-r", "./tools/ts-require.js", "sim/cli.ts", ...args], {
    cwd: ROOT,
    timeout: 60_000,
  });
  return stdout;
}

async function succeeds(argv: string[]): Promise<boolean> {
  return exec(argv[0], argv.slice(1)).then(
    () => true,
    () => false,
  );
}

/** Processes whose command line mentions the harness's state folder or the marker command. */
function harnessProcesses(marker: string): string[] {
  const found: string[] = [];
  for (const pid of fs.readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ").trim();
      if (cmd.includes(constants.SIM_DIR) || cmd.includes(marker)) found.push(`${pid} ${cmd}`);
    } catch {
      // exited while we looked
    }
  }
  return found;
}

/** How long the stand-in engine started over SSH may take to show in /proc. */
const MARKER_SEEN_TIMEOUT_MS = 10_000;

describe("sim harness lifecycle (down/up through the CLI)", function () {
  this.timeout(120_000);
  let recorded: SimHost[];
  const marker = `sleep ${4000 + (process.pid % 1000)}`;

  before(async () => {
    await simUp({ hosts: 3 });
    recorded = simFleet();
  });

  after(async () => {
    // Put back exactly the hosts that were up, whatever a failing test left behind.
    const layouts = Object.fromEntries(recorded.map((h) => [h.alias, h.layout]));
    await simUp({ hosts: Math.max(...recorded.map((h) => h.index)), layouts, passwordAuth: recorded.filter((h) => h.passwordAuth).map((h) => h.alias) });
  });

  it("status --json lists the running hosts", async () => {
    const status = JSON.parse(await simCli("status", "--json"));
    expect(status.bridge).to.deep.equal({ name: "nwbr0", exists: true, forwardRule: true });
    expect(status.hosts.filter((h: { up: boolean }) => h.up).map((h: { alias: string }) => h.alias)).to.include.members(["sim1", "sim2", "sim3"]);
  });

  it("down kills sshd, sessions and engines in every namespace, and removes namespaces, bridge and rule", async () => {
    const sim1 = recorded.find((h) => h.alias === "sim1")!;
    // A stand-in for an engine a deployment left running on the host.
    await sshExec(sim1, `setsid -f ${marker} </dev/null >/dev/null 2>&1`);
    // The login returns once the fork is made; on a busy machine the child may take a moment to show.
    const seenBy = Date.now() + MARKER_SEEN_TIMEOUT_MS;
    while (!harnessProcesses(marker).some((p) => p.includes(marker)) && Date.now() < seenBy) await new Promise((r) => setTimeout(r, 100));
    expect(harnessProcesses(marker).some((p) => p.includes(marker)), `the stand-in engine on sim1 within ${MARKER_SEEN_TIMEOUT_MS} ms`).to.equal(true);
    const modelsWasOurs = fs.existsSync(modelsMountPointMarker());

    const result = JSON.parse(await simCli("down", "--json"));
    expect(result.bridgeRemoved).to.equal(true);
    expect(result.removedHosts).to.include.members(["sim1", "sim2", "sim3"]);

    const netns = (await exec("ip", ["netns", "list"])).stdout;
    expect(netns).to.not.match(/^nw-/m);
    expect(await succeeds(["ip", "link", "show", "dev", "nwbr0"])).to.equal(false);
    const links = (await exec("ip", ["-o", "link", "show"])).stdout;
    expect(links).to.not.contain("nwv-");
    expect(await succeeds(["iptables", "-w", "5", "-C", "FORWARD", "-i", "nwbr0", "-o", "nwbr0", "-j", "ACCEPT"])).to.equal(false);
    expect(harnessProcesses(marker)).to.deep.equal([]);
    if (modelsWasOurs) expect(fs.existsSync(constants.HOST_MODELS_ROOT)).to.equal(false);

    const status = await simStatus();
    expect(status.hosts).to.deep.equal([]);
    expect(status.bridge.exists).to.equal(false);
  });

  it("down again has nothing to do", async () => {
    const result = JSON.parse(await simCli("down", "--json"));
    expect(result.removedHosts).to.deep.equal([]);
  });

  let fleet: SimFleet;
  it("up brings the hosts back with the same host keys", async () => {
    fleet = JSON.parse(await simCli("up", "--json"));
    expect(fleet.actions).to.deep.equal({ sim1: "started", sim2: "started", sim3: "started" });
    const old = Object.fromEntries(recorded.map((h) => [h.alias, h.fingerprint]));
    for (const h of fleet.hosts) expect(h.fingerprint).to.equal(old[h.alias]);
    for (const h of fleet.hosts) expect((await sshExec(h, "hostname")).stdout.trim()).to.equal(h.alias);
  });

  it("up on a running fleet keeps it, also when several callers race", async () => {
    const pids = (await simStatus()).hosts.map((h) => h.sshdPid);
    const [a, b, cli] = await Promise.all([simUp(), simUp(), simCli("up", "--json").then((s) => JSON.parse(s) as SimFleet)]);
    for (const f of [a, b, cli]) expect(f.actions).to.deep.equal({ sim1: "kept", sim2: "kept", sim3: "kept" });
    expect((await simStatus()).hosts.map((h) => h.sshdPid)).to.deep.equal(pids);
    expect(fs.existsSync(path.join(constants.SIM_DIR, "lock"))).to.equal(false);
  });

  it("up --time-scale rewrites the sim configs of running hosts without restarting them", async () => {
    const out = JSON.parse(await simCli("up", "--time-scale", "0.5", "--json")) as SimFleet;
    expect(out.actions).to.deep.equal({ sim1: "kept, sim config updated", sim2: "kept, sim config updated", sim3: "kept, sim config updated" });
    expect(JSON.parse(fs.readFileSync(out.hosts[0].simConfigPath, "utf8")).timeScale).to.equal(0.5);
    const back = await simUp({ timeScale: constants.DEFAULT_TIME_SCALE });
    expect(JSON.parse(fs.readFileSync(back.hosts[0].simConfigPath, "utf8")).timeScale).to.equal(constants.DEFAULT_TIME_SCALE);
  });

  it("rejects a bad layout with the allowed forms", async () => {
    const err = await simCli("up", "--hosts", "4", "--layout", "sim4=a100:2").then(
      () => undefined,
      (e: { stderr: string }) => e.stderr,
    );
    expect(err).to.contain('invalid GPU layout "a100:2": use <model>:<count> with model one of h100, mi300x and count 1-8 (e.g. h100:2), or "none"');
  });
});

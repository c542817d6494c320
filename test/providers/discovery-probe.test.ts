/**
 * The whole discovery probe over real SSH against the simulated fleet: one login per host, one
 * script, and the parsed HostFacts checked against what the harness built (GPUs, fabric address,
 * checkpoint bytes, device nodes, the vllm shim). A listener started inside a host shows up with its
 * owner and blocks a planned port; it is stopped again afterwards. Needs root (the harness).
 */
import { expect } from "chai";
import { ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { modelRequirements } from "../../lib/discovery/model";
import { parseProbe, probeCommand, ProbeOptions, HostFacts } from "../../lib/discovery/probe";
import { PROBE_SCRIPT } from "../../lib/discovery/probe-script";
import { SshSession } from "../../lib/ssh/client";
import { SshError } from "../../lib/ssh/errors";
import { runInHost, simUp, spawnInHost } from "../../sim/hosts";
import type { SimHost } from "../../sim/hosts";

/** A port no other test plans (engines use 8100-8103, 8301-8304 and their NIXL ports). */
const TEST_PORT = 18555;

/** Device nodes the harness makes per layout, plus an RDMA device no simulated host has. */
function declaredDevices(h: SimHost): string[] {
  const gpu =
    h.vendor === "amd"
      ? ["/dev/kfd", ...h.gpus.map((g) => `/dev/dri/renderD${g.renderMinor}`)]
      : ["/dev/nvidiactl", ...h.gpus.map((g) => `/dev/nvidia${g.index}`)];
  return [...gpu, "/dev/infiniband/uverbs0"];
}

/** Logs in with the host key the harness holds now (another test may have rotated it meanwhile). */
async function login(alias: string): Promise<{ host: SimHost; ssh: SshSession }> {
  for (let attempt = 1; ; attempt++) {
    const host = (await simUp({})).hosts.find((h) => h.alias === alias)!;
    try {
      const ssh = await SshSession.open({
        alias: host.alias,
        host: host.address,
        port: host.sshPort,
        user: "root",
        privateKey: fs.readFileSync(host.privateKeyPath, "utf8"),
        hostKey: host.hostKey,
        allowFirstContact: false,
        connectTimeoutS: 10,
      });
      return { host, ssh };
    } catch (e) {
      if (!(e instanceof SshError && e.code === "NARWHAL_SSH_HOST_KEY") || attempt >= 3) throw e;
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}

async function probe(ssh: SshSession, opts: ProbeOptions): Promise<HostFacts> {
  const cmd = probeCommand(opts);
  const out = await ssh.run(cmd.command, { stdin: cmd.stdin, timeoutS: cmd.timeoutS, name: "discovery probe" });
  return parseProbe(out, opts);
}

const optionsFor = (h: SimHost, extra: Partial<ProbeOptions> = {}): ProbeOptions => ({
  alias: h.alias,
  fabricInterface: h.fabricInterface,
  modelDir: h.modelDir,
  devicePaths: declaredDevices(h),
  runtime: { kind: "native" },
  ...extra,
});

describe("discovery probe over SSH (simulated fleet)", function () {
  this.timeout(120_000);
  let hosts: SimHost[];
  const sessions = new Map<string, SshSession>();

  before(async () => {
    ({ hosts } = await simUp({}));
    for (const h of hosts) {
      const { host, ssh } = await login(h.alias);
      sessions.set(host.alias, ssh);
    }
  });

  after(() => sessions.forEach((s) => s.close()));

  it("reads every host's facts in one login each, with no section errors", async () => {
    const facts = await Promise.all(hosts.map((h) => probe(sessions.get(h.alias)!, optionsFor(h))));
    facts.forEach((f, i) => {
      const h = hosts[i];
      expect(f.errors, h.alias).to.deep.equal([]);
      expect(f.hostname).to.equal(h.alias);

      // GPUs as the harness made them: sim1 and sim2 NVIDIA, sim3 AMD, two each.
      expect(f.accelerators.vendor).to.equal(h.vendor);
      expect(f.accelerators.product).to.equal(h.gpus[0].product);
      expect(f.accelerators.gpus.map((g) => g.uuid)).to.deep.equal(h.gpus.map((g) => g.uuid));
      // AMD: each GPU's render node as the host's /sys/class/drm links it (the harness numbers them in reverse).
      expect(f.accelerators.gpus.map((g) => g.renderNode)).to.deep.equal(h.gpus.map((g) => (h.vendor === "amd" ? `/dev/dri/renderD${g.renderMinor}` : undefined)));

      expect(f.fabric).to.deep.equal({ interface: "fab0", addresses: [h.address], address: h.address });

      // The checkpoint's requirements from the bytes on the host equal those of the harness's files.
      const config = fs.readFileSync(path.join(h.modelDirOnMachine, "config.json"));
      const tokenizer = fs.readFileSync(path.join(h.modelDirOnMachine, "tokenizer_config.json"));
      expect(f.model!.dir).to.equal("/models/tiny-llama");
      expect(f.model!.requirements).to.deep.equal(modelRequirements(config, tokenizer));
      expect(f.model!.requirements).to.include({
        architecture: "LlamaForCausalLM",
        dtype: "bfloat16",
        maxPositionEmbeddings: 32768,
        numHiddenLayers: 16,
        numKvHeads: 8,
        headDim: 64,
        trustRemoteCode: false,
        ssmConvStateLayoutDS: false,
      });
      expect(f.model!.requirements.tokenizer).to.include({ tokenizerClass: "LlamaTokenizerFast", chatTemplate: true });
      expect(f.model!.generationConfig).to.include({ eos_token_id: 2 });

      // Device nodes: the GPU ones exist, the RDMA one does not, in the runbook's words.
      expect(f.devices!.missing).to.deep.equal(["/dev/infiniband/uverbs0"]);
      expect(f.devices!.paths.filter((p) => p.present).map((p) => p.type)).to.satisfy((types: string[]) => types.every((t) => t === "character special file"));
      expect(f.devices!.message).to.equal(`Restore the declared device exposure before launch. Missing on host ${h.alias}: /dev/infiniband/uverbs0.`);

      // The vllm shim is a shell script: its version is known, its packages are not.
      expect(f.runtime).to.deep.include({
        kind: "native",
        command: "vllm",
        path: "/usr/local/sbin/vllm",
        scriptKind: "shell",
        interpreter: null,
        vllmVersion: "0.29.0",
        packages: null,
        packagesSource: null,
      });
      expect(f.runtime!.packagesUnknownReason).to.equal(
        "/usr/local/sbin/vllm is a shell script, not a Python console script, so its environment's packages cannot be read",
      );

      // sshd listens on the host's address; engines other tests started (if any) have their owner named.
      const sshd = f.listeners!.find((l) => l.port === 22);
      expect(sshd?.address).to.equal(h.address);
      expect(sshd!.owners.map((o) => o.name)).to.include("sshd");
      for (const l of f.listeners!.filter((x) => (x.port >= 8100 && x.port <= 8103) || (x.port >= 8301 && x.port <= 8304))) {
        expect(l.owners, `${h.alias}:${l.port}`).to.not.be.empty;
      }
    });
  });

  describe("a listener started inside sim2", () => {
    let child: ChildProcess | undefined;
    const sim2 = () => hosts.find((h) => h.alias === "sim2")!;
    const planned = [
      { engineId: "e2", kind: "nixl" as const, port: TEST_PORT },
      { engineId: "e2", kind: "transfer" as const, range: [TEST_PORT - 5, TEST_PORT + 5] as const },
    ];

    before(async () => {
      child = spawnInHost("sim2", ["python3", "-m", "http.server", "--bind", sim2().address, String(TEST_PORT)]);
      for (let i = 0; ; i++) {
        const r = await runInHost("sim2", ["ss", "-ltnH", `sport = :${TEST_PORT}`]);
        if (r.stdout.trim() !== "") break;
        if (i >= 50) throw new Error(`python3 did not listen on ${TEST_PORT} inside sim2 within 10 s`);
        await new Promise((res) => setTimeout(res, 200));
      }
    });

    after(async () => {
      if (child && child.exitCode === null && child.signalCode === null) {
        const gone = new Promise((res) => child!.once("exit", res));
        child.kill("SIGTERM");
        await gone;
      }
    });

    it("is parsed with its owner and blocks the planned ports, naming engine, kind, port, host and process", async () => {
      const f = await probe(sessions.get("sim2")!, optionsFor(sim2(), { plannedPorts: planned }));
      expect(f.errors).to.deep.equal([]);
      // nsenter execs python3, so the spawned pid is the listener's pid.
      expect(f.listeners).to.deep.include({ address: sim2().address, port: TEST_PORT, owners: [{ name: "python3", pid: child!.pid! }] });
      expect(f.portConflicts.map((c) => c.message)).to.deep.equal([
        `engine e2: planned NIXL side-channel port ${TEST_PORT} on host sim2 is already in use by python3 (pid ${child!.pid}); stop it or choose another port`,
        `engine e2: planned transfer port range ${TEST_PORT - 5}-${TEST_PORT + 5} on host sim2 includes port ${TEST_PORT}, already in use by python3 (pid ${child!.pid}); stop it or choose another range`,
      ]);
    });

    it("no longer blocks once stopped", async () => {
      const gone = new Promise((res) => child!.once("exit", res));
      child!.kill("SIGTERM");
      await gone;
      const f = await probe(sessions.get("sim2")!, optionsFor(sim2(), { plannedPorts: planned }));
      expect(f.listeners!.map((l) => l.port)).to.not.include(TEST_PORT);
      expect(f.portConflicts).to.deep.equal([]);
    });
  });

  it("names host and section for a wrong interface, a missing checkpoint and a missing vllm", async () => {
    const sim1 = hosts.find((h) => h.alias === "sim1")!;
    const f = await probe(
      sessions.get("sim1")!,
      optionsFor(sim1, { fabricInterface: "fab9", modelDir: "/models/nope", runtime: { kind: "native", vllmCommand: "/opt/none/bin/vllm" } }),
    );
    expect(f.errors.map((e) => [e.host, e.section])).to.deep.equal([
      ["sim1", "fabric"],
      ["sim1", "model"],
      ["sim1", "runtime"],
    ]);
    expect(f.errors.map((e) => e.message)).to.deep.equal([
      'host sim1, probe section fabric: fabric interface fab9 does not exist on this host; check hosts[].fabricInterface (ip: Device "fab9" does not exist.)',
      "host sim1, probe section model: checkpoint directory /models/nope does not exist; stage the checkpoint there (model.checkpointDir) before discovery",
      'host sim1, probe section runtime: runtime.vllmCommand "/opt/none/bin/vllm" is not an executable on this login\'s PATH; install vLLM or set runtime.vllmCommand to its path',
    ]);
    // What could be read still is.
    expect(f.hostname).to.equal("sim1");
    expect(f.accelerators.gpus).to.have.length(2);
    expect(f.devices!.missing).to.deep.equal(["/dev/infiniband/uverbs0"]);
  });

  it("still answers the host-discovery provider's one-argument call", async () => {
    const sim3 = hosts.find((h) => h.alias === "sim3")!;
    const out = await sessions.get("sim3")!.run("sh -s -- 'fab0'", { stdin: PROBE_SCRIPT, timeoutS: 60, name: "discovery probe" });
    const f = parseProbe(out, { alias: "sim3", fabricInterface: "fab0" });
    expect(f.errors).to.deep.equal([]);
    expect(f).to.include({ hostname: "sim3", model: null, runtime: null });
    // An AMD host's own device nodes are checked whatever was declared: /dev/kfd and each GPU's render node.
    expect(f.devices!.paths.map((p) => [p.path, p.present])).to.deep.equal([["/dev/kfd", true], ...sim3.gpus.map((g) => [`/dev/dri/renderD${g.renderMinor}`, true])]);
    expect(f.accelerators.product).to.equal("AMD Instinct MI300X");
    expect(f.fabric.address).to.equal(sim3.address);
  });
});

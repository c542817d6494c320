/**
 * The three engine runtime backends under mocks: which resources each registers, with which inputs and
 * options. Under mocks nothing runs; the docker-cli scripts themselves are tested against the local
 * Docker Engine (test/providers/docker-cli.test.ts) and the native ones under sh (test/unit/runtime).
 */
import { expect } from "chai";
import type { StoredLogin } from "../../lib/ssh/stored-login";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { parseFleetConfig } from "../../lib/config/parse";
import type * as command from "@pulumi/command";
import type { RuntimeSpec } from "../../lib/config/types";
import { LaunchInputs, LaunchPlan, renderLaunchPlan } from "../../lib/launch/plan";
import { LABELS } from "../../lib/runtime/container-spec";
import * as dockerCli from "../../lib/runtime/docker-cli";
import * as native from "../../lib/runtime/native";
import * as fields from "../../lib/runtime/container-fields";
import { envFile } from "../../lib/shell";
import { sha256Json } from "../../lib/digest";
import { fleetConfig, mockSecrets, type Registered } from "./support/fleet";
import { NO_LOCAL_FILES } from "../../components/fleet-inputs";
import type { KnownHostsFiles } from "../../components/runtime/types";
import { knownHostsFiles } from "../../entry/known-hosts";

const API_KEY = "mock-runtime-api-key-8c1f0e";
const SSH_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nmockruntimekey\n-----END OPENSSH PRIVATE KEY-----\n";
const IMAGE = `sha256:${"1f".repeat(32)}`;
const CONTAINER_ID = "c0".repeat(32);
const STARTED = "2026-01-01T00:00:00.123456789Z";
const u32 = (n: number) => Buffer.from([n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255]);
/** A well-formed ed25519 public key line, as discovery pins it. */
const HOST_KEY = `ssh-ed25519 ${Buffer.concat([u32(11), Buffer.from("ssh-ed25519"), u32(32), Buffer.alloc(32, 7)]).toString("base64")}`;
const JUMP_KEY = `ssh-ed25519 ${Buffer.concat([u32(11), Buffer.from("ssh-ed25519"), u32(32), Buffer.alloc(32, 9)]).toString("base64")}`;
const SECRET_SIG = "4dabf18193072939515e22adb298388d";

/** What a discovery records, so a whole Fleet's plans resolve under mocks. */
const DISCOVERED = (alias: string) => ({
  hostKey: HOST_KEY,
  fabricAddress: `198.18.0.${alias === "a" ? 11 : 12}`,
  accelerators: { vendor: "nvidia", product: "NVIDIA H100 80GB HBM3", gpus: [{ index: 0 }, { index: 1 }] },
  model: { dtype: "bfloat16", maxPositionEmbeddings: 32768, trustRemoteCode: false, ssmConvStateLayoutDS: false },
  runtime: { kind: "docker", vllmVersion: "0.29.0" },
  checkpoint: { modelTreeSha256: "ab".repeat(32), files: [{ path: "config.json", size: 10, sha256: "cd".repeat(32) }] },
});

const registered: Registered[] = [];
const options = new Map<string, pulumi.ResourceOptions>();

/** Where the docker backend keeps its known_hosts files here: nothing is written under mocks, so no machine's folder. */
const KNOWN_HOSTS_DIR = "/fixture/known-hosts";
/** Each known_hosts text the docker backend handed the entry's writer, by file, in the order it did. */
const knownHostsWrites = new Map<string, string[]>();
const recordKnownHosts: KnownHostsFiles["write"] = (file, text) => {
  knownHostsWrites.set(file, [...(knownHostsWrites.get(file) ?? []), text]);
};
/** Per docker provider, the files written when it was registered: the provider must not dial before its file holds the key. */
const writtenAtProviderRegistration = new Map<string, string[]>();

function isSecret(value: unknown): boolean {
  return typeof value === "object" && value !== null && (value as Record<string, unknown>)[SECRET_SIG] === "1b47061264138c4ac30d75fd1eb44270";
}

/** Mocks see secrets in their wire form; unwrap them to compare values. */
function reveal(value: unknown): unknown {
  return isSecret(value) ? (value as { value: unknown }).value : value;
}

/** The inputs with every secret replaced by a marker: what would be readable without the passphrase. */
function withoutSecrets(value: unknown): unknown {
  if (isSecret(value)) return "[secret]";
  if (Array.isArray(value)) return value.map(withoutSecrets);
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withoutSecrets(v)]));
  return value;
}

function promiseOf<T>(o: pulumi.Output<T>): Promise<T> {
  return new Promise((resolve) => o.apply(resolve));
}

function byName(name: string): Registered {
  const r = registered.find((x) => x.name === name);
  if (!r) throw new Error(`no resource named ${name}; registered: ${registered.map((x) => x.name).join(", ")}`);
  return r;
}

/** `rdma` runs the engine over ucx_rdma with these device nodes (the default one, uverbs0, for `true`). */
function launch(over: { id?: string; port?: number; vendor?: "nvidia" | "amd" | "none"; gpuIds?: number[]; rdma?: boolean | string[] } = {}): LaunchInputs {
  return {
    engine: { id: over.id ?? "e1", port: over.port ?? 8100, nixlPort: 5600, gpuIds: over.gpuIds ?? [2, 3], gpuIdsNamed: true },
    host: {
      alias: "a",
      fabricInterface: "fab0",
      fabricAddress: "198.18.0.11",
      vendor: over.vendor ?? "nvidia",
      // As discovery reads them from sysfs: GPU i of 4 at renderD(131 - i).
      ...(over.vendor === "amd" ? { renderNodes: (over.gpuIds ?? [2, 3]).map((i) => `/dev/dri/renderD${131 - i}`) } : {}),
    },
    model: { servedName: "tiny", checkpointDir: "/models/tiny" },
    policy: {
      vllmCommand: "vllm",
      transport: over.rdma ? "ucx_rdma" : "tcp",
      dtype: "bfloat16",
      kvCacheDtype: "auto",
      blockSize: 16,
      enforceEager: false,
      maxModelLen: 4096,
      maxNumSeqs: 64,
      gpuMemoryUtilization: 0.9,
      tensorParallelSize: (over.gpuIds ?? [2, 3]).length,
      prefixCaching: true,
      ucxTcpPortRange: "40000-40100",
      kvLeaseDurationS: 30,
      rdmaHcas: over.rdma ? ["mlx5_0:1"] : undefined,
      rdmaDevices: over.rdma ? (over.rdma === true ? ["/dev/infiniband/uverbs0"] : over.rdma) : undefined,
    },
  };
}

function runtimeSpec(kind: RuntimeSpec["kind"]): RuntimeSpec {
  return { kind, image: kind === "native" ? undefined : IMAGE, vllmCommand: "vllm", dockerCommand: "docker", restartKvPeers: false, deadlinesS: { pull: 600, start: 300, stop: 60, inspect: 30, health: 15 } };
}

const RUN_DIR = "/var/lib/narwhal-fleet/mock/engines/e1";
const EPOCH = "0123456789abcdef";
const DEADLINES = { pull: 600, start: 300, stop: 60, inspect: 30, health: 15 };
const CLI_OPTS = { runDir: RUN_DIR, dockerCommand: "docker", deadlinesS: DEADLINES };

describe("mocks: engine runtime backends", () => {
  let rt: typeof import("../../components/runtime");
  let dockerHost: typeof import("../../components/runtime/docker-host");
  let Engine: typeof import("../../components/engine").Engine;

  before(async () => {
    await pulumi.runtime.setMocks(
      {
        newResource(args) {
          registered.push({ type: args.type, name: args.name, inputs: args.inputs, provider: args.provider });
          if (args.type === "pulumi:providers:docker") writtenAtProviderRegistration.set(args.name, [...knownHostsWrites.keys()]);
          const create = String(args.inputs.create ?? "");
          const state =
            args.type !== "command:remote:Command"
              ? args.inputs
              : args.name.endsWith("-started")
                ? { ...args.inputs, stdout: `${STARTED}\n` }
                : create.includes("spec_sha=")
                  ? { ...args.inputs, stdout: `docker-cli engine e1: adopting\n{"containerId":"${CONTAINER_ID}","startedAt":"${STARTED}","launchToken":"${"ab".repeat(16)}"}\n` }
                  : { ...args.inputs, stdout: '{"pid":42,"startedAt":"2026-01-01T00:00:00Z"}' };
          const id = args.type === "docker:index/container:Container" ? CONTAINER_ID : `${args.name}-id`;
          if (args.type === "pulumi-nodejs:dynamic/narwhal:HostDiscovery") return { id, state: { ...args.inputs, ...DISCOVERED(String(args.inputs.alias)) } };
          if (args.type === "pulumi-nodejs:dynamic/narwhal:Liveness") return { id, state: { ...args.inputs, epoch: EPOCH } };
          return { id, state };
        },
        call(args) {
          throw new Error(`unexpected call to ${args.token}`);
        },
      },
      "narwhal-fleet",
      "mock",
      false,
    );
    rt = await import("../../components/runtime");
    dockerHost = await import("../../components/runtime/docker-host");
    Engine = (await import("../../components/engine")).Engine;
  });

  beforeEach(() => {
    registered.splice(0);
    options.clear();
    knownHostsWrites.clear();
    writtenAtProviderRegistration.clear();
  });

  /** A parent whose (legacy, inherited) transformation records every child's resource options. */
  function scope(): pulumi.ComponentResource {
    return new pulumi.ComponentResource("test:index:Scope", `scope-${Math.random().toString(16).slice(2, 8)}`, {}, {
      transformations: [
        (a) => {
          options.set(a.name, a.opts);
          return undefined;
        },
      ],
    });
  }

  function connection(over: Partial<command.types.input.remote.ConnectionArgs> = {}): command.types.input.remote.ConnectionArgs {
    return { host: "198.18.0.12", port: 2222, user: "ops", privateKey: pulumi.secret(SSH_KEY), hostKey: pulumi.output(HOST_KEY), perDialTimeout: 10, ...over };
  }

  function processArgs(kind: RuntimeSpec["kind"], over: { launch?: LaunchInputs; hostScope?: { name: string; parent: pulumi.Resource }; connection?: command.types.input.remote.ConnectionArgs } = {}) {
    const l = over.launch ?? launch();
    return {
      hostAlias: "b",
      plan: pulumi.output(renderLaunchPlan(l)),
      connection: over.connection ?? connection(),
      engineApiKey: pulumi.secret(API_KEY),
      runDir: RUN_DIR,
      runtimeVersion: "0.29.0",
      restartEpoch: EPOCH,
      healthTimeoutS: 300,
      stopTimeoutS: 60,
      runtime: runtimeSpec(kind),
      placement: { modelDir: "/models/tiny", stack: "mock" },
      hostScope: over.hostScope ?? { name: "fleet-b", parent: scope() },
      knownHosts: { dir: KNOWN_HOSTS_DIR, write: recordKnownHosts },
    };
  }

  async function settle(p: import("../../components/runtime").EngineProcess) {
    return { identity: await promiseOf(p.identity), startedAt: await promiseOf(p.startedAt) };
  }

  function expectNoApiKeyOutsideSecrets(): void {
    for (const r of registered) {
      const open = JSON.stringify(withoutSecrets(r.inputs));
      expect(open, `${r.type} ${r.name}`).to.not.include(API_KEY);
      expect(open, `${r.type} ${r.name}`).to.not.include("mockruntimekey");
    }
  }

  describe("native", () => {
    it("registers exactly today's remote command: lib/runtime/native.ts scripts, secret stdin, plan, vLLM version and liveness epoch triggers", async () => {
      const parent = scope();
      const args = processArgs("native");
      const proc = rt.nativeProcess("fleet-e1", args, parent);
      expect(await settle(proc)).to.deep.equal({ identity: { hostAlias: "b", pid: 42 }, startedAt: "2026-01-01T00:00:00Z" });

      expect(registered.map((r) => `${r.type} ${r.name}`).filter((t) => !t.startsWith("test:"))).to.deep.equal(["command:remote:Command fleet-e1-process"]);
      const plan = renderLaunchPlan(launch());
      const runtime = { runDir: RUN_DIR, healthTimeoutS: 300, stopTimeoutS: 60 };
      const { connection: conn, stdin, ...rest } = byName("fleet-e1-process").inputs;
      expect(rest).to.deep.equal({
        create: native.startScript(plan, runtime),
        delete: native.stopScript(plan, runtime),
        triggers: [plan.planSha256, "0.29.0", EPOCH],
        addPreviousOutputInEnv: false,
        logging: "stderr",
      });
      expect(stdin).to.not.equal(reveal(stdin)); // still wrapped as a secret
      expect(reveal(stdin)).to.equal(envFile({ VLLM_API_KEY: API_KEY }));
      expect(isSecret(conn)).to.equal(true);
      expect(reveal(conn)).to.deep.include({ host: "198.18.0.12", port: 2222, user: "ops", hostKey: HOST_KEY, perDialTimeout: 10 });
      expect(options.get("fleet-e1-process")).to.include({ parent, deleteBeforeReplace: true });
      expect(proc.resources.map((r) => r.constructor.name)).to.deep.equal(["Command"]);
      expectNoApiKeyOutsideSecrets();
    });
  });

  describe("docker-cli", () => {
    it("runs lib/runtime/docker-cli.ts's scripts with the key on stdin, replaced on plan, spec or liveness epoch change", async () => {
      const parent = scope();
      const proc = rt.dockerCliProcess("fleet-e1", processArgs("docker-cli"), parent);
      expect(await settle(proc)).to.deep.equal({ identity: { hostAlias: "b", containerId: CONTAINER_ID }, startedAt: STARTED });

      expect(registered.filter((r) => !r.type.startsWith("test:")).map((r) => `${r.type} ${r.name}`)).to.deep.equal(["command:remote:Command fleet-e1-process"]);
      const plan = renderLaunchPlan(launch());
      const target = { image: IMAGE, modelDir: "/models/tiny", engineId: "e1", stack: "mock" };
      const spec = dockerCli.scriptContainerSpec(plan, target, CLI_OPTS);
      const { connection: conn, stdin, ...rest } = byName("fleet-e1-process").inputs;
      expect(rest).to.deep.equal({
        create: dockerCli.startScript(plan, target, CLI_OPTS),
        delete: dockerCli.stopScript(plan, target, CLI_OPTS),
        triggers: [plan.planSha256, spec.specSha256, EPOCH],
        addPreviousOutputInEnv: false,
        logging: "stderr",
      });
      expect(String(rest.create)).to.include("'--gpus' '\"device=2,3\"'").and.include(`'${IMAGE}'`);
      expect(stdin).to.not.equal(reveal(stdin));
      expect(reveal(stdin)).to.equal(envFile({ VLLM_API_KEY: API_KEY }));
      expect(reveal(conn)).to.deep.include({ host: "198.18.0.12", port: 2222, user: "ops", hostKey: HOST_KEY });
      expect(options.get("fleet-e1-process")).to.include({ parent, deleteBeforeReplace: true });
      expectNoApiKeyOutsideSecrets();
    });

    it("moves the spec trigger, not the plan trigger, when only the container changes (RDMA devices)", async () => {
      const a = rt.dockerCliProcess("fleet-e1", processArgs("docker-cli", { launch: launch({ rdma: ["/dev/infiniband/uverbs0"] }) }), scope());
      await settle(a);
      const b = rt.dockerCliProcess("fleet-e2", processArgs("docker-cli", { launch: launch({ rdma: ["/dev/infiniband/uverbs0", "/dev/infiniband/rdma_cm"] }) }), scope());
      await settle(b);
      const [ta, tb] = ["fleet-e1-process", "fleet-e2-process"].map((n) => byName(n).inputs.triggers as string[]);
      expect(ta[0]).to.equal(tb[0]);
      expect(ta[1]).to.match(/^sha256:/).and.not.equal(tb[1]);
      expect(String(byName("fleet-e2-process").inputs.create)).to.include("'--device' '/dev/infiniband/rdma_cm'");
    });
  });

  describe("docker (@pulumi/docker)", () => {
    it("makes one provider per host over ssh with the pinned key in a known_hosts file the entry's writer writes first", async () => {
      const parent = scope();
      const hostScope = { name: "fleet-b", parent };
      const e1 = rt.dockerProcess("fleet-e1", processArgs("docker", { hostScope }), scope());
      const e2 = rt.dockerProcess("fleet-e2", processArgs("docker", { hostScope, launch: launch({ id: "e2", port: 8101, gpuIds: [0, 1] }) }), scope());
      await settle(e1);
      await settle(e2);

      const providers = registered.filter((r) => r.type === "pulumi:providers:docker");
      expect(providers.map((p) => p.name)).to.deep.equal(["fleet-b-docker"]);
      const file = path.join(KNOWN_HOSTS_DIR, "fleet-b-docker.known_hosts");
      expect(providers[0].inputs.host).to.equal("ssh://ops@198.18.0.12:2222");
      expect(JSON.parse(String(providers[0].inputs.sshOpts))).to.deep.equal([
        "-o", "StrictHostKeyChecking=yes",
        "-o", `UserKnownHostsFile=${file}`,
        "-o", "GlobalKnownHostsFile=/dev/null",
        "-o", "UpdateHostKeys=no",
        "-o", "CheckHostIP=no",
        "-o", "BatchMode=yes",
        "-o", "ConnectTimeout=10",
      ]);
      // Once per provider, not per engine, and written by the time the provider is registered with its sshOpts.
      expect([...knownHostsWrites]).to.deep.equal([[file, [`[198.18.0.12]:2222 ${HOST_KEY}\n`]]]);
      expect(writtenAtProviderRegistration.get("fleet-b-docker")).to.deep.equal([file]);
      expect(options.get("fleet-b-docker")).to.include({ parent });
      // Both containers go through that provider.
      const providerRef = `urn:pulumi:mock::narwhal-fleet::test:index:Scope$pulumi:providers:docker::fleet-b-docker::fleet-b-docker-id`;
      for (const c of registered.filter((r) => r.type === "docker:index/container:Container")) expect(c.provider, c.name).to.equal(providerRef);
      expectNoApiKeyOutsideSecrets();
    });

    it("pins a bastion's key too, through a ProxyCommand that runs with the same known_hosts", async () => {
      const proxy = { host: "203.0.113.5", port: 22, user: "jump", hostKey: JUMP_KEY, privateKey: pulumi.secret(SSH_KEY) };
      await settle(rt.dockerProcess("fleet-e1", processArgs("docker", { connection: connection({ proxy }), hostScope: { name: "fleet-j", parent: scope() } }), scope()));
      const file = path.join(KNOWN_HOSTS_DIR, "fleet-j-docker.known_hosts");
      expect(knownHostsWrites.get(file)).to.deep.equal([`[198.18.0.12]:2222 ${HOST_KEY}\n203.0.113.5 ${JUMP_KEY}\n`]);
      const opts = JSON.parse(String(byName("fleet-j-docker").inputs.sshOpts)) as string[];
      expect(opts.slice(-2)).to.deep.equal([
        "-o",
        `ProxyCommand='ssh' '-o' 'StrictHostKeyChecking=yes' '-o' 'UserKnownHostsFile=${file}' '-o' 'GlobalKnownHostsFile=/dev/null' ` +
          `'-o' 'UpdateHostKeys=no' '-o' 'CheckHostIP=no' '-o' 'BatchMode=yes' '-p' '22' '-l' 'jump' '-W' %h:%p '--' '203.0.113.5'`,
      ]);
    });

    it("maps every flag of the one container spec and refuses a flag it cannot map", () => {
      const plan = renderLaunchPlan(launch());
      const spec = dockerCli.scriptContainerSpec(plan, { image: IMAGE, modelDir: "/models/tiny", engineId: "e1", stack: "mock", dockerRuntime: "nvidia" }, CLI_OPTS);
      expect(fields.dockerContainerFields(spec)).to.deep.include({ runtime: "nvidia", gpus: '"device=2,3"', envFile: `${RUN_DIR}/container.env` });
      const argv = [...spec.runArgv];
      argv.splice(1, 0, "--privileged", "true");
      expect(() => fields.dockerContainerFields({ ...spec, runArgv: argv })).to.throw(
        "docker backend: container-spec.ts produced --privileged, which has no @pulumi/docker Container field here; map it in components/runtime/container-fields.ts",
      );
      expect(() => fields.containerTarget(plan, runtimeSpec("native"), { modelDir: "/models/tiny", stack: "mock" })).to.throw(
        'engine e1: runtime.kind "native" runs the engine in a container and needs runtime.image',
      );
    });

    it("refuses a host or bastion without a pinned key", () => {
      expect(() => dockerHost.dockerLogin("b", { host: "198.18.0.12", port: 22, user: "ops" })).to.throw(
        "host b: no pinned host key, and the docker provider's ssh is only ever run with StrictHostKeyChecking=yes; pin hosts[].hostKey and run again.",
      );
      expect(() => dockerHost.dockerLogin("b", { host: "h", hostKey: HOST_KEY, proxy: { host: "j" } })).to.throw(
        "host b: its bastion b-jump (root@j:22) has no pinned host key, and the docker provider's ssh is only ever run with StrictHostKeyChecking=yes; " +
          "make the bastion a host of the fleet with hosts[].hostKey pinned and run again.",
      );
      expect(dockerHost.dockerHostUrl({ host: "fd00::5", port: 22, user: "root", hostKey: HOST_KEY })).to.equal("ssh://root@[fd00::5]:22");
    });

    it("runs the spec's container by image ID: GPUs, host network and IPC, read-only model, labels, healthcheck", async () => {
      const parent = scope();
      const proc = rt.dockerProcess("fleet-e1", processArgs("docker"), parent);
      expect(await settle(proc)).to.deep.equal({ identity: { hostAlias: "b", containerId: CONTAINER_ID }, startedAt: STARTED });

      expect(registered.filter((r) => !r.type.startsWith("test:")).map((r) => `${r.type} ${r.name}`)).to.deep.equal([
        "pulumi:providers:docker fleet-b-docker",
        "command:remote:Command fleet-e1-gpu-wait",
        "docker:index/container:Container fleet-e1-container",
        "command:remote:Command fleet-e1-health",
        "command:remote:Command fleet-e1-started",
      ]);
      // Engines sharing a GPU start one after the other: the container waits for its GPUs to be free.
      const wait = registered.find((r) => r.name === "fleet-e1-gpu-wait")!;
      expect(String(wait.inputs.create)).to.include("gpus=' 2 3 '").and.include("GPU wait deadline");
      expect(registered.some((r) => /RemoteImage|RegistryImage|docker:index\/image/.test(r.type))).to.equal(false);

      const plan: LaunchPlan = renderLaunchPlan(launch());
      const target = { image: IMAGE, modelDir: "/models/tiny", engineId: "e1", stack: "mock" };
      const spec = dockerCli.scriptContainerSpec(plan, target, CLI_OPTS);
      const own = fields.dockerContainerSpec(spec, plan.url, DEADLINES);
      // Its own spec hash: docker-cli's reconcile must never adopt a container this backend owns.
      expect(own.specSha256).to.match(/^sha256:[0-9a-f]{64}$/).and.not.equal(spec.specSha256);
      const { envs, ...c } = byName("fleet-e1-container").inputs;
      expect(c).to.deep.equal({
        name: "narwhal-mock-e1",
        image: IMAGE,
        command: [...spec.serveArgs],
        labels: [
          { label: LABELS.stack, value: "mock" },
          { label: LABELS.engine, value: "e1" },
          { label: LABELS.planSha256, value: plan.planSha256 },
          { label: LABELS.gpus, value: "2,3" },
          { label: LABELS.specSha256, value: own.specSha256 },
          { label: LABELS.launchToken, value: "pulumi-docker" },
          { label: "narwhal.liveness-epoch", value: EPOCH },
        ],
        networkMode: "host",
        ipcMode: "host",
        mounts: [{ type: "bind", source: "/models/tiny", target: "/model", readOnly: true }],
        devices: [],
        gpus: '"device=2,3"',
        groupAdds: [],
        securityOpts: [],
        ulimits: [],
        restart: "no",
        mustRun: true,
        healthcheck: {
          tests: ["CMD", "python3", "-c", "import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)", "http://198.18.0.11:8100/health"],
          interval: "5s",
          timeout: "3s",
          retries: 3,
          startPeriod: "300s",
        },
        wait: false,
        stopTimeout: 60,
        destroyGraceSeconds: 60,
      });
      expect(c.command).to.include("/model").and.not.include("/models/tiny");
      // The API key is one entry of a secret envs list; the rest is the plan's environment, GPUs renumbered.
      expect(envs).to.not.equal(reveal(envs));
      expect(reveal(envs)).to.deep.equal([...Object.entries(spec.env).map(([k, v]) => `${k}=${v}`), `VLLM_API_KEY=${API_KEY}`]);
      expect(reveal(envs)).to.include("CUDA_VISIBLE_DEVICES=0,1");
      expect(options.get("fleet-e1-container")).to.deep.include({ parent, replaceOnChanges: ["labels"], deleteBeforeReplace: true, additionalSecretOutputs: ["envs"] });

      // The wait for /health is the backend's own: a container that fails it is kept in the run folder's
      // attempts/ before the error, where the provider's refresh or replacement of the container cannot reach.
      const health = byName("fleet-e1-health").inputs;
      expect(health.triggers).to.deep.equal([CONTAINER_ID]);
      expect(String(health.create))
        .to.include(`kc_run='${RUN_DIR}'`)
        .and.include('keep_attempt "$kc_run/attempts"')
        .and.include(`cid=${CONTAINER_ID}`)
        .and.include(`'${plan.url}/health'`)
        .and.include("deadline=$(( $(date +%s) + 300 ))")
        .and.include("timeout -k 5 30 'docker' logs")
        .and.include(`'@pulumi/docker Container narwhal-mock-e1: ${IMAGE} ${spec.serveArgs.join(" ")}'`);
      expect(health.delete).to.equal(undefined);
      expect(reveal(health.connection)).to.deep.include({ host: "198.18.0.12", hostKey: HOST_KEY });
      expect(options.get("fleet-e1-health")).to.deep.include({ parent });
      const started = byName("fleet-e1-started").inputs;
      // The start time, and the identity everything downstream takes, wait for /health.
      const healthResource = proc.resources[2];
      expect(proc.resources).to.have.length(4);
      expect(options.get("fleet-e1-started")!.dependsOn).to.deep.equal([healthResource]);
      expect(started.triggers).to.deep.equal([CONTAINER_ID]);
      expect(started.create).to.equal(`set -eu\ntimeout -k 5 30 'docker' inspect --format '{{.State.StartedAt}}' '${CONTAINER_ID}'\n`);
      expect(started.delete).to.equal(undefined);
      expect(reveal(started.connection)).to.deep.include({ host: "198.18.0.12", hostKey: HOST_KEY });
      expectNoApiKeyOutsideSecrets();
    });

    it("gives a ROCm engine /dev/kfd and only its own render nodes, and an RDMA engine its verbs devices", async () => {
      const amd = launch({ vendor: "amd", gpuIds: [1] });
      await settle(rt.dockerProcess("fleet-e1", processArgs("docker", { launch: amd }), scope()));
      const a = byName("fleet-e1-container").inputs;
      expect(a).to.deep.include({
        devices: [{ hostPath: "/dev/kfd" }, { hostPath: "/dev/dri/renderD130" }],
        groupAdds: ["video"],
        securityOpts: ["seccomp=unconfined"],
        capabilities: { adds: ["SYS_PTRACE"] },
        networkMode: "host",
        ipcMode: "host",
      });
      expect(a.gpus).to.equal(undefined);
      expect(reveal(a.envs)).to.include("HIP_VISIBLE_DEVICES=0");

      const rdma = launch({ id: "e2", rdma: ["/dev/infiniband/uverbs0", "/dev/infiniband/rdma_cm"] });
      await settle(rt.dockerProcess("fleet-e2", processArgs("docker", { launch: rdma }), scope()));
      const r = byName("fleet-e2-container").inputs;
      expect(r).to.deep.include({
        devices: [{ hostPath: "/dev/infiniband/uverbs0" }, { hostPath: "/dev/infiniband/rdma_cm" }],
        capabilities: { adds: ["IPC_LOCK"] },
        ulimits: [{ name: "memlock", soft: -1, hard: -1 }],
        gpus: '"device=2,3"',
      });
    });

    it("moves the spec label, and so replaces the container, when only the image changes", async () => {
      await settle(rt.dockerProcess("fleet-e1", processArgs("docker"), scope()));
      const args = processArgs("docker", { hostScope: { name: "fleet-c", parent: scope() } });
      args.runtime = { ...args.runtime, image: `sha256:${"2e".repeat(32)}` };
      await settle(rt.dockerProcess("fleet-e9", args, scope()));
      const label = (n: string, l: string) => (byName(n).inputs.labels as Array<{ label: string; value: string }>).find((x) => x.label === l)!.value;
      expect(label("fleet-e9-container", LABELS.planSha256)).to.equal(label("fleet-e1-container", LABELS.planSha256));
      expect(label("fleet-e9-container", LABELS.specSha256)).to.not.equal(label("fleet-e1-container", LABELS.specSha256));
      expect(byName("fleet-e9-container").inputs.image).to.equal(`sha256:${"2e".repeat(32)}`);
    });
  });

  describe("engineProcess and the Engine component", () => {
    it("picks the backend from runtime.kind", async () => {
      for (const kind of ["native", "docker-cli", "docker"] as const) {
        registered.splice(0);
        await settle(rt.engineProcess(kind, `k-${kind}`, processArgs(kind, { hostScope: { name: `h-${kind}`, parent: scope() } }), scope()));
        expect(registered.filter((r) => !r.type.startsWith("test:")).map((r) => `${r.type} ${r.name}`), kind).to.deep.equal(
          kind === "docker"
            ? ["pulumi:providers:docker h-docker-docker", "command:remote:Command k-docker-gpu-wait", "docker:index/container:Container k-docker-container", "command:remote:Command k-docker-health", "command:remote:Command k-docker-started"]
            : [`command:remote:Command k-${kind}-process`],
        );
      }
    });

    function engine(kind: RuntimeSpec["kind"], name: string) {
      return new Engine(name, {
        plan: renderLaunchPlan(launch()),
        hostAlias: "b",
        servedName: "tiny",
        connection: connection(),
        engineApiKey: pulumi.secret(API_KEY),
        runDir: RUN_DIR,
        expectedVersion: "0.29.0",
        healthTimeoutS: 300,
        stopTimeoutS: 60,
        runtime: runtimeSpec(kind),
        modelDir: "/models/tiny",
        stack: "mock",
        knownHosts: { dir: KNOWN_HOSTS_DIR, write: recordKnownHosts },
        router: { hostAlias: "a", login: pulumi.output({ host: "198.18.0.11", port: 22, user: "ops" } as StoredLogin), credentials: pulumi.secret({ privateKey: "k" }), binDir: "/var/lib/narwhal-fleet/mock/narwhal/0.7.0/venv/bin", backendPort: 8001 },
      });
    }

    it("hands the native pid to the generation and the cache capture", async () => {
      const e = engine("native", "n1");
      expect(await promiseOf(e.pid)).to.equal(42);
      await promiseOf(e.cache.urn);
      expect(byName("n1-generation").inputs.processIdentity).to.deep.equal({ hostAlias: "b", pid: 42 });
      expect(byName("n1-cache").inputs.processIdentity).to.deep.equal({ hostAlias: "b", pid: 42 });
      expect(registered.filter((r) => r.type === "command:remote:Command").map((r) => r.name)).to.deep.equal(["n1-process"]);
      const plan = renderLaunchPlan(launch());
      const runtime = { runDir: RUN_DIR, healthTimeoutS: 300, stopTimeoutS: 60 };
      expect(byName("n1-process").inputs).to.deep.include({ create: native.startScript(plan, runtime), delete: native.stopScript(plan, runtime), triggers: [plan.planSha256, "0.29.0", EPOCH] });
    });

    it("hands a container id (and no pid) to the generation for both container backends", async () => {
      for (const [kind, name] of [["docker-cli", "c1"], ["docker", "d1"]] as const) {
        const e = engine(kind, name);
        expect(await promiseOf(e.pid), kind).to.equal(undefined);
        expect(await promiseOf(e.startedAt), kind).to.equal(STARTED);
        await promiseOf(e.cache.urn);
        expect(byName(`${name}-generation`).inputs.processIdentity, kind).to.deep.equal({ hostAlias: "b", containerId: CONTAINER_ID });
        expect(byName(`${name}-cache`).inputs.processIdentity, kind).to.deep.equal({ hostAlias: "b", containerId: CONTAINER_ID });
      }
      // Without a host scope, the engine owns its host's provider.
      expect(registered.filter((r) => r.type === "pulumi:providers:docker").map((r) => r.name)).to.deep.equal(["d1-b-docker"]);
      expectNoApiKeyOutsideSecrets();
    });

    it("hands the generation and the cache capture the digest of the start command's triggers where a re-run adopts the process (native, docker-cli), and none for a docker container", async () => {
      const plan = renderLaunchPlan(launch());
      const target = { image: IMAGE, modelDir: "/models/tiny", engineId: "e1", stack: "mock" };
      const triggers = {
        native: [plan.planSha256, "0.29.0", EPOCH],
        "docker-cli": [plan.planSha256, dockerCli.scriptContainerSpec(plan, target, CLI_OPTS).specSha256, EPOCH],
      };
      for (const [kind, name] of [["native", "k1"], ["docker-cli", "k2"]] as const) {
        const e = engine(kind, name);
        await promiseOf(e.cache.urn);
        expect(byName(`${name}-process`).inputs.triggers, kind).to.deep.equal(triggers[kind]);
        expect(byName(`${name}-generation`).inputs.processStartKey, kind).to.equal(sha256Json(triggers[kind]));
        expect(byName(`${name}-cache`).inputs.processStartKey, kind).to.equal(sha256Json(triggers[kind]));
      }
      await promiseOf(engine("docker", "k3").cache.urn);
      expect(byName("k3-generation").inputs).to.not.have.property("processStartKey");
      expect(byName("k3-cache").inputs).to.not.have.property("processStartKey");
    });
    it("a docker fleet: one provider per host (named after its discovery), each engine's own GPUs and stack", async () => {
      const { Fleet } = await import("../../components/fleet");
      // e2 on its host's second GPU, so each container's device request is its own.
      const config = fleetConfig({ runtime: { kind: "docker", image: IMAGE } });
      (config.engines as Array<Record<string, unknown>>)[1].gpuIds = [1];
      const spec = parseFleetConfig(config);
      const secrets = mockSecrets(API_KEY, SSH_KEY);
      const fleet = new Fleet("fleet", { spec, secrets, localFiles: NO_LOCAL_FILES, knownHosts: { ...knownHostsFiles("mock"), write: recordKnownHosts }, stack: "mock" });
      const engines = await promiseOf(fleet.engines);
      expect(Object.values(engines).map((e) => e.pid)).to.deep.equal([undefined, undefined, undefined]);
      const sorted = (rs: Registered[]) => [...rs].sort((x, y) => x.name.localeCompare(y.name));
      expect(sorted(registered.filter((r) => r.type === "pulumi:providers:docker")).map((r) => [r.name, r.inputs.host])).to.deep.equal([
        ["fleet-a-docker", "ssh://root@198.18.0.11:22"],
        ["fleet-b-docker", "ssh://ops@198.18.0.12:2222"],
      ]);
      // The Fleet hands the engines the entry's files; they go to runs/<stack>/ssh, the folder destroy finds again.
      const ssh = path.resolve("runs", "mock", "ssh");
      expect(Object.fromEntries(knownHostsWrites)).to.deep.equal({
        [path.join(ssh, "fleet-a-docker.known_hosts")]: [`198.18.0.11 ${HOST_KEY}\n`],
        [path.join(ssh, "fleet-b-docker.known_hosts")]: [`[198.18.0.12]:2222 ${HOST_KEY}\n`],
      });
      const containers = sorted(registered.filter((r) => r.type === "docker:index/container:Container"));
      expect(containers.map((c) => [c.name, c.inputs.name, c.inputs.gpus, c.provider?.split("::").pop()])).to.deep.equal([
        ["fleet-e1-container", "narwhal-mock-e1", '"device=0"', "fleet-a-docker-id"],
        ["fleet-e2-container", "narwhal-mock-e2", '"device=1"', "fleet-b-docker-id"],
        ["fleet-e3-container", "narwhal-mock-e3", '"device=1"', "fleet-a-docker-id"],
      ]);
      expect(registered.some((r) => r.name.endsWith("-process"))).to.equal(false);
      expectNoApiKeyOutsideSecrets();
    });
  });
});

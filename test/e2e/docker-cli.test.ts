/**
 * e2e: the docker-cli engine runtime through the real Pulumi CLI. The stack's one host is a docker
 * host (sim/hosts/docker.ts): a simulated NVIDIA host running its own Docker Engine, so the docker CLI
 * that the program drives over SSH starts the engine-simulator image (built locally, no registry) with
 * `--network host` on the host's fabric address, the checkpoint mounted from the host's /models and
 * `--gpus` handled by the host's simulated NVIDIA container runtime hook. Every container carries the
 * stack label, which the hooks use to remove whatever a failing test leaves behind. The last case
 * starts a container the way the runbook's launcher does, and the first up of a stack naming its
 * launch directory keeps it as the engine. The final case destroys without retainOnDestroy and lists
 * the host: none of the stack's files, containers, volumes, networks or listeners remain.
 */
import { expect } from "chai";
import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { request } from "undici";
import type { Stack } from "@pulumi/pulumi/automation";
import { loadDockerImage, runInHost, simDown, simUp } from "../../sim/hosts";
import type { SimHost } from "../../sim/hosts";
import { buildSimImage } from "../../sim/image/build";
import { LABELS } from "../../lib/runtime/container-spec";
import type { LaunchPlan } from "../../lib/launch/plan";
import { shellLine, shq } from "../../lib/shell";
import { runbookEnv, runbookPlan } from "../unit/launch/runbook-record";
import { evidenceRoot, EvidenceStore } from "../../lib/evidence/store";
import { expectNarwhalCheckAgrees } from "./support/narwhal-check";
import { hostFiles, hostListeners, onPorts } from "./support/host-leftovers";
import { API_KEY, E2E_TIME_SCALE, EngineEntry, hostEntries, MODEL, openStack, plainOutputs, PROJECT_ROOT, setObjectConfig } from "./support/stack";

const STACK = "e2e-docker";
const HOST = "simdock";
const ENGINES: EngineEntry[] = [
  { id: "d1", host: HOST, gpuIds: [0], port: 8401, attestationPort: 8411, nixlPort: 5801 },
  { id: "d2", host: HOST, gpuIds: [1], port: 8402, attestationPort: 8412, nixlPort: 5802 },
];
/** Every port the stack listens on: engines, attestation sidecars, NIXL, and the router and its monitoring (openStack's). */
const STACK_PORTS = [...ENGINES.flatMap((e) => [e.port, e.attestationPort, e.nixlPort]), 8321, 9391, 9392];
const quiet = { onOutput: () => undefined };

interface EngineOut { host: string; url: string; planSha256: string; startedAt: string; runbook?: { action: string; reason: string } }
/** The launch directory of the runbook's container for d1 (the last case). */
const RUNBOOK_RUN = "/srv/runbook/runs/engine-launch-d1";
interface Inspect {
  Id: string;
  Path: string;
  Args: string[];
  Image: string;
  State: { Running: boolean; StartedAt: string };
  Config: { Labels: Record<string, string>; Cmd: string[]; Entrypoint: string[]; Env: string[] };
  HostConfig: { NetworkMode: string; IpcMode: string; DeviceRequests: Array<{ DeviceIDs: string[]; Capabilities: string[][] }> | null };
  Mounts: Array<{ Source: string; Destination: string; RW: boolean }>;
}

async function docker(...args: string[]): Promise<string> {
  return (await runInHost(HOST, ["docker", ...args])).stdout.trim();
}

/** Containers on the host's daemon with this stack's label (running or not), optionally of one engine. */
async function stackContainers(engineId?: string): Promise<string[]> {
  const filters = ["--filter", `label=${LABELS.stack}=${STACK}`, ...(engineId ? ["--filter", `label=${LABELS.engine}=${engineId}`] : [])];
  const out = await docker("ps", "-aq", "--no-trunc", ...filters);
  return out ? out.split("\n") : [];
}

async function removeStackContainers(): Promise<void> {
  const ids = await stackContainers();
  if (ids.length > 0) await docker("rm", "-f", ...ids);
}

/** Everything the host's daemon holds, one `kind id name labels` a line: containers, volumes, networks, images. */
async function daemonObjects(): Promise<string[]> {
  const lists = [
    await docker("ps", "-a", "--no-trunc", "--format", "container {{.ID}} {{.Names}} {{.Labels}}"),
    await docker("volume", "ls", "--format", "volume {{.Name}} {{.Labels}}"),
    await docker("network", "ls", "--no-trunc", "--format", "network {{.ID}} {{.Name}} {{.Labels}}"),
    await docker("image", "ls", "-a", "--no-trunc", "--format", "image {{.ID}} {{.Repository}}:{{.Tag}}"),
  ];
  return lists.flatMap((l) => l.split("\n")).filter(Boolean).sort();
}

async function inspect(id: string): Promise<Inspect> {
  return (JSON.parse(await docker("inspect", id)) as Inspect[])[0];
}

const runDir = (id: string) => `/var/lib/narwhal-fleet/${STACK}/engines/${id}`;

describe("e2e: docker-cli runtime on a host with its own Docker Engine", function () {
  this.timeout(180_000);
  let stack: Stack;
  let host: SimHost;
  let image: string;
  const started = new Map<string, Inspect>();

  before(async function () {
    this.timeout(240_000);
    [host] = (await simUp({ dockerHosts: [HOST], aliases: [HOST], timeScale: E2E_TIME_SCALE })).hosts as [SimHost];
    image = buildSimImage({ log: () => undefined, timeScale: E2E_TIME_SCALE }).id;
    expect(await loadDockerImage(HOST, image)).to.equal(image);
    stack = await openStack(STACK, [host], ENGINES, {
      // The last case builds the runbook's container from the plan a destroyed stack left in its folder.
      hosts: hostEntries([host], { retainOnDestroy: true }),
      runtime: { kind: "docker-cli", image, deadlinesS: { pull: 60, start: 60, stop: 10, inspect: 30 } },
    });
    // From nothing: an earlier run's state may name containers the harness has since removed.
    await stack.destroy(quiet);
    await removeStackContainers();
  });

  after(async () => {
    if (!host) return;
    await removeStackContainers();
    // The docker host is outside the numbered fleet that other files rebuild from simFleet(): leave none behind.
    await simDown({ aliases: [HOST] });
  });

  it("up runs one container per engine through the docker CLI, labelled with the stack and its launch token", async () => {
    await stack.up(quiet);
    await expectNarwhalCheckAgrees(stack);
    const out = (await stack.outputs()).engines.value as Record<string, EngineOut>;
    expect(Object.keys(out).sort()).to.deep.equal(["d1", "d2"]);

    for (const e of ENGINES) {
      const ids = await stackContainers(e.id);
      expect(ids, `${e.id}: containers`).to.have.length(1);
      const c = await inspect(ids[0]);
      started.set(e.id, c);
      const token = (await runInHost(HOST, ["cat", `${runDir(e.id)}/launch-token`])).stdout.trim();
      expect(token).to.match(/^[0-9a-f]{32}$/);
      expect(c.State.Running).to.equal(true);
      expect(c.Image).to.equal(image);
      expect(c.Config.Labels).to.include({
        [LABELS.stack]: STACK,
        [LABELS.engine]: e.id,
        [LABELS.planSha256]: out[e.id].planSha256,
        [LABELS.launchToken]: token,
      });
      expect(c.HostConfig.NetworkMode).to.equal("host");
      expect(c.HostConfig.DeviceRequests).to.deep.equal([{ ...c.HostConfig.DeviceRequests![0], DeviceIDs: e.gpuIds!.map(String), Capabilities: [["gpu"]] }]);
      expect(c.Mounts.find((m) => m.Destination === "/model")).to.include({ Source: host.modelDir, RW: false });
      // The host's NVIDIA hook gave the container its own GPU's device node and no other.
      const dev = await docker("exec", c.Id, "/usr/bin/node", "-e", "console.log(require('fs').readdirSync('/dev').filter((n) => /^nvidia[0-9]+$/.test(n)).join(' '))");
      expect(dev).to.equal(`nvidia${e.gpuIds![0]}`);

      // The engine answers on the host's fabric address, from outside the host, and guards /v1 with the key.
      const url = out[e.id].url;
      expect(url).to.equal(`http://${host.address}:${e.port}`);
      expect((await request(`${url}/health`)).statusCode, `${e.id} /health`).to.equal(200);
      const unauthorised = await request(`${url}/v1/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: MODEL, prompt: "hi", max_tokens: 4 }) });
      expect(unauthorised.statusCode).to.equal(401);
      await unauthorised.body.dump();
      const completion = await request(`${url}/v1/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${API_KEY}` },
        body: JSON.stringify({ model: MODEL, prompt: "The narwhal", max_tokens: 8, temperature: 0 }),
      });
      expect(completion.statusCode).to.equal(200);
      const body = (await completion.body.json()) as { choices: Array<{ text: string }> };
      expect(body.choices[0].text).to.be.a("string").that.is.not.empty;
    }
  });

  it("a second up changes nothing and keeps the same containers", async () => {
    const result = await stack.up({ ...quiet, expectNoChanges: true });
    expect(Object.keys(result.summary.resourceChanges ?? {}).filter((op) => op !== "same")).to.deep.equal([]);
    for (const e of ENGINES) {
      const ids = await stackContainers(e.id);
      expect(ids).to.deep.equal([started.get(e.id)!.Id]);
      expect((await inspect(ids[0])).State.StartedAt).to.equal(started.get(e.id)!.State.StartedAt);
    }
  });

  it("keeps the API key out of the state and off the container's command line: it travels in the env file only", async () => {
    const atRest = fs.readFileSync(path.join(PROJECT_ROOT, `.state/.pulumi/stacks/narwhal-fleet/${STACK}.json`), "utf8");
    expect(atRest).to.include("narwhal-fleet:engineApiKey").and.not.include(API_KEY);
    const exported = execFileSync(path.join(PROJECT_ROOT, ".tools/bin/pulumi"), ["stack", "export", "--stack", STACK], { cwd: PROJECT_ROOT, encoding: "utf8", maxBuffer: 256 * 1024 * 1024 });
    // The export holds the docker-cli scripts (they name the launch-token label), yet not the key.
    expect(exported).to.include(LABELS.launchToken);
    expect(exported).not.to.include(API_KEY);
    expect(JSON.stringify(await plainOutputs(stack))).not.to.include(API_KEY);

    for (const e of ENGINES) {
      const c = await inspect(started.get(e.id)!.Id);
      for (const words of [c.Args, c.Config.Cmd, c.Config.Entrypoint, [c.Path]]) expect(words.join(" "), `${e.id} command line`).not.to.include(API_KEY);
      // It reached the engine (the completion above needed it) through the 0600 env file, the only file that holds it.
      const files = await runInHost(HOST, ["sh", "-c", `cd ${runDir(e.id)} && stat -c '%a %n' container.env && grep -rlF -e "$KEY" . || true`], { env: { KEY: API_KEY } });
      expect(files.stdout.trim().split("\n")).to.deep.equal(["600 container.env", "./container.env"]);
    }
  });

  /**
   * `launch_engine prepare/check/start` of a container launch serving `plan`: its launch directory,
   * and a container labelled with the directory's ownership token running `python3 -m
   * vllm.entrypoints.openai.api_server` (the stack label only lets the hooks clean up after a failure).
   */
  async function runbookContainer(plan: LaunchPlan): Promise<string> {
    const launch = runbookPlan(plan, { backend: "container", image });
    const text = JSON.stringify(launch, null, 2) + "\n";
    const checked = { plan_sha256: createHash("sha256").update(text).digest("hex"), image_id: image, vllm_api_version: "0.29.0" };
    const env = Object.entries(runbookEnv(plan, API_KEY)).map(([k, v]) => `${k}=${v}\n`).join("");
    const owner = randomBytes(16).toString("hex");
    const created = await runInHost(HOST, ["sh", "-c", `set -eu
umask 077
run=${shq(RUNBOOK_RUN)}
rm -rf "$run" && mkdir -p "$run"
cat > "$run/launch.json"
printf '%s\\n' ${shq(JSON.stringify(checked))} > "$run/checked.json"
printf '%s' ${shq(env)} > "$run/container.env"
printf '%s\\n' ${shq(JSON.stringify({ label: owner }))} > "$run/docker-owner.json"
cid=$(docker create --label io.narwhal.launch=${owner} --label io.narwhal.operation=${randomBytes(16).toString("hex")} --label ${shq(`${LABELS.stack}=${STACK}`)} \\
  --name narwhal-engine-1-${randomBytes(6).toString("hex")} --network host --ipc host --gpus device=0 --env-file "$run/container.env" \\
  --mount ${shq(`type=bind,src=${host.modelDir},dst=/model,readonly`)} --entrypoint python3 ${image} ${shellLine(launch.args as string[])})
printf '%s\\n' "$cid" > "$run/container.id"
docker start "$cid" > /dev/null
echo "$cid"`], { input: text });
    expect(created.code, created.stderr).to.equal(0);
    const cid = created.stdout.trim();
    for (let i = 0; i < 200 && (await request(`${plan.url}/health`).then((r) => r.statusCode, () => 0)) !== 200; i++) await new Promise((r) => setTimeout(r, 300));
    return cid;
  }

  it("destroy removes every container of the stack", async () => {
    await stack.destroy(quiet);
    expect(await stackContainers()).to.deep.equal([]);
    for (const e of ENGINES) {
      const health = await request(`http://${host.address}:${e.port}/health`).then((r) => r.statusCode, () => "refused");
      expect(health, `${e.id} after destroy`).to.equal("refused");
    }
  });

  it("the first up of a stack naming a runbook launch directory keeps the launcher's container for d1, and destroy removes it", async function () {
    this.timeout(360_000);
    // The destroyed stack's own record of d1's plan is still in its run folder.
    const plan = (JSON.parse((await runInHost(HOST, ["cat", `${runDir("d1")}/launch.json`])).stdout) as { plan: LaunchPlan }).plan;
    const cid = await runbookContainer(plan);
    await setObjectConfig(stack, "engines", ENGINES.map((e) => (e.id === "d1" ? { ...e, runbookRun: RUNBOOK_RUN } : e)));
    try {
      await stack.up(quiet);
      const out = (await stack.outputs()).engines.value as Record<string, EngineOut>;
      expect(out.d1.runbook, "d1's runbook outcome").to.include({ action: "adopt" });
      expect(out.d1.runbook!.reason).to.include(`runbook launch ${RUNBOOK_RUN} (container ${cid.slice(0, 12)}) serves engine d1's plan`);
      // No container of the program's own for d1: the launcher's is the engine, still the one it started.
      expect(await stackContainers("d1")).to.deep.equal([]);
      const c = await inspect(cid);
      expect(c.State.Running).to.equal(true);
      expect(out.d1.startedAt).to.equal(c.State.StartedAt);
      expect(out.d2.runbook).to.equal(undefined);
      expect((await request(`${out.d1.url}/health`)).statusCode).to.equal(200);

      await stack.destroy(quiet);
      expect(await docker("ps", "-aq", "--no-trunc", "--filter", `id=${cid}`)).to.equal("");
    } finally {
      await setObjectConfig(stack, "engines", ENGINES);
    }
  });

  it("destroy without retainOnDestroy leaves nothing of the stack on the docker host: files, containers, volumes, networks, listeners", async function () {
    this.timeout(360_000);
    // From nothing, whatever the cases above left; they kept the stack's folder on purpose, and an
    // operator's destroy removes it by default.
    await stack.destroy(quiet);
    await runInHost(HOST, ["rm", "-rf", `/var/lib/narwhal-fleet/${STACK}`]);
    await stack.setConfig("narwhal-fleet:hosts[0].retainOnDestroy", { value: "false" }, true);
    const filesBefore = await hostFiles(HOST, STACK);
    const daemonBefore = await daemonObjects();
    const listenersBefore = await hostListeners(HOST);
    expect(onPorts(listenersBefore, STACK_PORTS), "the stack's ports before its up").to.deep.equal([]);

    await stack.up(quiet);
    expect(await hostFiles(HOST, STACK), "the stack's folder while it is deployed").to.include(STACK);
    expect((await daemonObjects()).filter((o) => o.startsWith("container ") && o.includes(STACK)), "the stack's containers while it is deployed").to.have.length(ENGINES.length);
    // The image declares a volume (sim/image/build.ts): docker made one for each engine's container.
    const volumes = (await daemonObjects()).filter((o) => o.startsWith("volume ") && !daemonBefore.includes(o));
    expect(volumes, "anonymous volumes of the stack's containers").to.have.length(ENGINES.length);
    const serving = await hostListeners(HOST);
    for (const e of ENGINES) expect(onPorts(serving, [e.port]), `${e.id}'s listener while it is deployed`).to.have.length.greaterThan(0);

    await stack.destroy(quiet);
    const added = (now: string[], before: string[]) => now.filter((x) => !before.includes(x));
    expect(added(await hostFiles(HOST, STACK), filesBefore), "files the destroy left on the host").to.deep.equal([]);
    const daemonAfter = await daemonObjects();
    expect(daemonAfter.filter((o) => o.includes(STACK)), "containers, volumes, networks named or labelled with the stack").to.deep.equal([]);
    expect(added(daemonAfter, daemonBefore), "objects the destroy left on the host's daemon").to.deep.equal([]);
    // The engine image stays: the operator names it in runtime.image (here the harness loaded it), the stack
    // only runs it, and the next up or another stack on the host runs the same one.
    expect(daemonAfter.some((o) => o.startsWith(`image ${image} `)), `image ${image} after destroy`).to.equal(true);
    const listenersAfter = await hostListeners(HOST);
    expect(onPorts(listenersAfter, STACK_PORTS), "the stack's listeners after destroy").to.deep.equal([]);
    expect(added(listenersAfter, listenersBefore), "listeners the destroy left on the host").to.deep.equal([]);
    // Local evidence is always kept.
    expect((await new EvidenceStore(evidenceRoot(PROJECT_ROOT, STACK)).list()).length).to.be.greaterThan(0);
  });
});

/**
 * Gate B on an engine host, over the host's own SSH login: simulated host sim50 has no narwhal-attest
 * and no route to a package index, so the install script installs the approved revision from the host's
 * wheelhouse (as `router.narwhal.wheelhouse` configures it for every host), adopts it on a second run,
 * and the attestation sidecar of an engine started on the host runs from that install and attests the
 * engine's proved generation. Takes sim50 down at the end.
 */
import { expect } from "chai";
import * as fs from "node:fs";
import { simDown, simUp, sshExec } from "../../sim/hosts";
import type { SimHost } from "../../sim/hosts";
import { HOST_WHEELHOUSE } from "../../sim/hosts/wheelhouse";
import { installScript, type InstallMarker, type InstallOptions } from "../../lib/router/install";
import { renderLaunchPlan, type LaunchInputs, type LaunchPlan } from "../../lib/launch/plan";
import { startScript, stopScript, type NativeRuntimeOptions } from "../../lib/runtime/native";
import { attestationDocument, documentDigest } from "../../lib/attestation/document";
import { sidecarEndpoint, sidecarStartScript, sidecarStopScript, type SidecarOptions } from "../../lib/attestation/sidecar";
import { cacheLayoutDigest } from "../../lib/engine/cache-layout";
import { envFile, shq } from "../../lib/shell";
import { provider as generationProvider } from "../../dynamic-providers/engine-generation/provider";
import type { EngineGenerationOutputs } from "../../dynamic-providers/engine-generation/schema";
import { provider as attestation } from "../../dynamic-providers/attestation/provider";
import type { AttestationOutputs } from "../../dynamic-providers/attestation/schema";
import { ranks } from "../unit/attestation/fixtures";
import { simLaunch, simLogin } from "./support/sim-launch";
import { provider as presence } from "../../dynamic-providers/install-presence/provider";
import type { InstallPresenceInputs, InstallPresenceOutputs } from "../../dynamic-providers/install-presence/check";

const ALIAS = "sim50";
const API_KEY = "sk-narwhal-install-7c21e0";
const STACK_DIR = "/var/lib/narwhal-fleet/provider-narwhal-install";

function launch(h: SimHost): LaunchInputs {
  return simLaunch(h, { id: "e50", port: 8395, nixlPort: 5795, gpuIds: [0] });
}

/** A remote command with `stdin` as a here-document: how a script that reads its secret from stdin runs over sshExec. */
const withStdin = (script: string, stdin: string) => `sh -c ${shq(script)} <<'NARWHAL_STDIN'\n${stdin}NARWHAL_STDIN\n`;
const lastJson = <T>(stdout: string): T => JSON.parse(stdout.trim().split("\n").pop()!) as T;

describe("providers: Gate B on an engine host (sim50), installed from its wheelhouse, and its sidecar run from the install", function () {
  this.timeout(900_000);
  let host: SimHost;
  let marker: InstallMarker;
  let plan: LaunchPlan;
  const options: InstallOptions = {
    source: { kind: "version", version: "0.7.0" },
    host: ALIAS,
    installDir: `${STACK_DIR}/narwhal`,
    wheelhouse: HOST_WHEELHOUSE,
    timeoutS: 600,
  };
  const runtime: NativeRuntimeOptions = { runDir: `${STACK_DIR}/engines/e50`, healthTimeoutS: 60, stopTimeoutS: 10 };
  let sidecar: SidecarOptions | undefined;

  const ssh = (command: string, timeoutMs = 120_000) => sshExec(host, command, { timeoutMs });

  before(async function () {
    this.timeout(180_000);
    [host] = (await simUp({ hosts: 50, aliases: [ALIAS] })).hosts as [SimHost];
    plan = renderLaunchPlan(launch(host));
  });

  after(async () => {
    if (!host) return;
    if (sidecar) await ssh(sidecarStopScript(sidecar));
    if (plan) await ssh(stopScript(plan, runtime));
    await simDown({ aliases: [ALIAS] });
  });

  it("has no narwhal-attest of its own and no route to the package index: nothing is pre-provisioned", async () => {
    const found = await ssh("command -v narwhal-attest");
    expect(found.code, found.stdout).to.not.equal(0);
    // No default route: nothing beyond the simulated bridge is reachable (and nothing here tries).
    const routes = await ssh("ip -4 route show default; ip -6 route show default");
    expect(routes.code, routes.stderr).to.equal(0);
    expect(routes.stdout.trim()).to.equal("");
  });

  it("installs the approved revision from the host's wheelhouse and records it in the marker", async () => {
    const r = await ssh(installScript(options), 700_000);
    expect(r.code, r.stderr).to.equal(0);
    marker = lastJson<InstallMarker>(r.stdout);
    expect(marker).to.include({ revision: "narwhal-inference==0.7.0", version: "0.7.0", binDir: `${STACK_DIR}/narwhal/narwhal-inference-0.7.0/venv/bin` });
    expect(marker.digest).to.match(/^sha256:[0-9a-f]{64}$/);
    const help = await ssh(`${shq(`${marker.binDir}/narwhal-attest`)} --help`);
    expect(help.code, help.stderr).to.equal(0);
    expect(help.stdout).to.contain("--document");
    const stored = await ssh(`cat ${shq(`${STACK_DIR}/narwhal/narwhal-inference-0.7.0/install.json`)}`);
    expect(JSON.parse(stored.stdout)).to.deep.equal(marker);
  });

  it("adopts the finished install on a second run, without pip", async () => {
    const started = Date.now();
    const r = await ssh(installScript(options));
    expect(r.code, r.stderr).to.equal(0);
    expect(lastJson<InstallMarker>(r.stdout)).to.deep.equal(marker);
    expect(Date.now() - started).to.be.below(30_000);
  });

  it("a refresh finds the install gone once its folder is removed, and the update installs it again", async () => {
    const { login, privateKey } = simLogin(host);
    const inputs: InstallPresenceInputs = { hostAlias: ALIAS, stack: "provider-narwhal-install", login, credentials: { privateKey }, install: options, probeTimeoutS: 30 };
    const created = (await presence.create(inputs)).outs as InstallPresenceOutputs;
    const read = async (props: InstallPresenceOutputs) => (await presence.read!("id", props)).props as InstallPresenceOutputs;
    expect(await read(created)).to.include({ observedState: "present" });
    expect(await presence.diff!("id", await read(created), inputs)).to.include({ changes: false });

    const folder = `${STACK_DIR}/narwhal/narwhal-inference-0.7.0`;
    expect((await ssh(`rm -rf ${shq(folder)}`)).code).to.equal(0);
    const gone = await read(created);
    expect(gone).to.include({
      observedState: "gone",
      observedDetail: `the narwhal install on host ${ALIAS} is gone: ${folder} lacks install.json, venv/bin/python, venv/bin/narwhal-serve, venv/bin/narwhal-attest`,
    });
    expect(await presence.diff!("id", gone, inputs)).to.deep.equal({ changes: true, replaces: [], deleteBeforeReplace: false });

    const again = (await presence.update!("id", gone, inputs)).outs as InstallPresenceOutputs;
    // The same revision, the same files: what ran from the first install runs from this one.
    expect(again.lastReinstall?.marker).to.include({ revision: marker.revision, version: marker.version, digest: marker.digest, binDir: marker.binDir });
    expect(await read(again)).to.include({ observedState: "present" });
    expect(await presence.diff!("id", await read(again), inputs)).to.include({ changes: false });
    // Only a refresh that saw it gone installs: an update for another reason runs nothing on the host.
    const kept = (await presence.update!("id", again, { ...inputs, probeTimeoutS: 20 })).outs as InstallPresenceOutputs;
    expect(kept).to.deep.include({ probeTimeoutS: 20, lastReinstall: again.lastReinstall });
  });

  it("a host that cannot be asked is not a gone install", async () => {
    const { login, privateKey } = simLogin(host);
    const inputs: InstallPresenceInputs = { hostAlias: ALIAS, stack: "provider-narwhal-install", login: { ...login, host: "198.18.0.250", connectTimeoutS: 1 }, credentials: { privateKey }, install: options, probeTimeoutS: 5 };
    const seen = (await presence.read!("id", { ...inputs, observedState: "present" })).props as InstallPresenceOutputs;
    expect(seen.observedState).to.equal("unknown");
    expect(seen.observedDetail).to.match(/^host sim50 could not be asked: /);
    expect(await presence.diff!("id", seen, inputs)).to.include({ changes: false });
  });

  it("installs once when hosts share the state folder: concurrent installs take turns, and the later ones adopt the first", async () => {
    // Two installs of one folder at once, as engine hosts whose stateDir is one shared filesystem run them.
    const shared = { ...options, installDir: `${STACK_DIR}/shared` };
    const [a, b] = await Promise.all([ssh(installScript(shared), 700_000), ssh(installScript(shared), 700_000)]);
    expect(a.code, a.stderr).to.equal(0);
    expect(b.code, b.stderr).to.equal(0);
    expect(lastJson<InstallMarker>(a.stdout)).to.deep.equal(lastJson<InstallMarker>(b.stdout));
  });

  it("names a wheelhouse the host lacks before touching anything", async () => {
    const r = await ssh(installScript({ ...options, installDir: `${STACK_DIR}/other`, wheelhouse: "/srv/no-wheels" }));
    expect(r.code).to.equal(1);
    expect(r.stderr).to.contain("narwhal install on host sim50: the host lacks prerequisites:");
    expect(r.stderr).to.contain("router.narwhal.wheelhouse /srv/no-wheels is not a folder on this host");
    expect((await ssh(`test -e ${shq(`${STACK_DIR}/other`)}`)).code).to.equal(1);
  });

  it("runs the engine's sidecar from the install, and it attests the engine's proved generation", async () => {
    const started = await ssh(withStdin(startScript(plan, runtime), envFile({ VLLM_API_KEY: API_KEY })));
    expect(started.code, started.stderr).to.equal(0);
    const { pid } = lastJson<{ pid: number }>(started.stdout);
    const identity = { hostAlias: ALIAS, pid };
    const generation = (await generationProvider.create({ engineId: "e50", hostAlias: ALIAS, url: plan.url, apiKey: API_KEY, processIdentity: identity, planSha256: plan.planSha256, expectedVersion: "0.29.0", servedName: "tiny-llama", probeTimeoutS: 30 })).outs as EngineGenerationOutputs;
    const layout = { tensorParallelSize: 1, ranks: ranks("bfloat16", 1) };
    const doc = attestationDocument({
      engineId: "e50",
      plan,
      layout,
      cacheLayoutDigest: cacheLayoutDigest(layout),
      generation: { generationDigest: generation.generationDigest, version: generation.version, processIdentity: generation.processIdentity },
      model: { architecture: "LlamaForCausalLM", numHiddenLayers: null, configSha256: "c0".repeat(32) },
      transfer: { nixlVersion: "0.7.1", connectorVersion: 9, checkDigest: "sha256:" + "d1".repeat(32) },
    });
    sidecar = {
      engineId: "e50",
      command: `${marker.binDir}/narwhal-attest`,
      runDir: `${STACK_DIR}/attestation/e50`,
      document: JSON.stringify(doc),
      documentDigest: documentDigest(doc),
      engineUrl: plan.url,
      owner: identity,
      endpoint: sidecarEndpoint(plan.url, 8495),
      startTimeoutS: 60,
      stopTimeoutS: 10,
    };
    const up = await ssh(sidecarStartScript(sidecar));
    expect(up.code, up.stderr).to.equal(0);
    const { pid: sidecarPid, startedAt } = lastJson<{ pid: number; startedAt: string }>(up.stdout);
    // The process serving the endpoint is the install's narwhal-attest.
    const cmdline = fs.readFileSync(`/proc/${sidecarPid}/cmdline`, "utf8").split("\0");
    expect(cmdline.join(" ")).to.contain(`${marker.binDir}/narwhal-attest --document ${STACK_DIR}/attestation/e50/engine-attestation.json`);

    const outs = (await attestation.create({
      engineId: "e50",
      hostAlias: ALIAS,
      url: sidecar.endpoint.url,
      document: doc,
      documentDigest: documentDigest(doc),
      generationDigest: generation.generationDigest,
      processStartTime: generation.processStartTime,
      version: generation.version,
      processIdentity: generation.processIdentity,
      planSha256: plan.planSha256,
      cacheLayoutDigest: doc.launch.cache_layout_sha256,
      sidecar: { pid: sidecarPid, startedAt },
      probeTimeoutS: 30,
    })).outs as AttestationOutputs;
    expect(outs.contract).to.deep.equal(doc.contract);
    expect(outs.contract).to.include({ connector_version: 9, transfer_version: "0.7.1" });
  });
});

import { expect } from "chai";
import { request } from "undici";
import * as fs from "node:fs";
import { execFileSync } from "node:child_process";
import * as path from "node:path";
import { openStack, plainOutputs, sharedFleet, API_KEY, E2E_TIME_SCALE, MODEL, PROJECT_ROOT } from "./support/stack";
import { runInHost, simUp } from "../../sim/hosts";
import { pidAlive } from "../../sim/hosts/exec";
import { expectNarwhalCheckAgrees } from "./support/narwhal-check";

interface EngineOut { host: string; role: string; url: string; pid: number; startedAt: string; planSha256: string }
interface HostOut { hostname: string; hostKeyFingerprint: string; accelerator: { vendor: string; count: number }; fabricAddress: string }

describe("e2e: first slice through the real CLI", function () {
  this.timeout(1_200_000);

  it("deploys every engine, each answering /health and serving the model", async () => {
    const { stack, engines } = await sharedFleet();
    const out = (await stack.outputs()).engines.value as Record<string, EngineOut>;
    expect(Object.keys(out).sort()).to.deep.equal(engines.map((e) => e.id).sort());
    for (const [id, e] of Object.entries(out)) {
      const health = await request(`${e.url}/health`);
      expect(health.statusCode, `${id} /health`).to.equal(200);
      const models = await request(`${e.url}/v1/models`, { headers: { authorization: `Bearer ${API_KEY}` } });
      const body = (await models.body.json()) as { data: Array<{ id: string }> };
      expect(body.data.map((m) => m.id)).to.include(MODEL);
    }
    expect(out.e1.role).to.equal("prefill");
    expect([out.e2.role, out.e3.role, out.e4.role]).to.deep.equal(["decode", "decode", "decode"]);
  });

  it("pins the host key it met on first contact and reports each host's inventory", async () => {
    const { stack, hosts } = await sharedFleet();
    const out = (await stack.outputs()).hosts.value as Record<string, HostOut>;
    for (const h of hosts) {
      expect(out[h.alias].hostKeyFingerprint).to.equal(h.fingerprint);
      expect(out[h.alias].hostname).to.equal(h.alias);
      expect(out[h.alias].fabricAddress).to.equal(h.address);
      expect(out[h.alias].accelerator.count).to.equal(h.gpus.length);
    }
  });

  it("keeps the engine API key out of plaintext state, outputs and engine command lines", async () => {
    const { stack } = await sharedFleet();
    // The state file as it rests in the backend (the Automation API's export would decrypt secrets).
    const state = fs.readFileSync(path.join(PROJECT_ROOT, ".state/.pulumi/stacks/narwhal-fleet/e2e.json"), "utf8");
    expect(state).to.include("narwhal-fleet:engineApiKey").and.not.include(API_KEY);
    expect(JSON.stringify(await plainOutputs(stack))).to.not.include(API_KEY);
    // The one output that carries it is a secret.
    expect((await stack.outputs()).engineApiKey).to.deep.equal({ value: API_KEY, secret: true });
    // The key reaches each engine through its environment, never its command line, and guards /v1.
    const engines = (await stack.outputs()).engines.value as Record<string, EngineOut>;
    for (const [id, e] of Object.entries(engines)) {
      // The live process per its run folder (another test may have restarted it out of band).
      const pidFile = `/var/lib/narwhal-fleet/e2e/engines/${id}/pid`;
      const proc = await runInHost(e.host, ["sh", "-c", `p=$(cat ${pidFile}); tr '\\0' '\\n' < /proc/$p/cmdline; echo ---; tr '\\0' '\\n' < /proc/$p/environ`]);
      const [cmdline, environ] = proc.stdout.split("---");
      expect(cmdline, `${id} command line`).to.include("serve").and.not.include(API_KEY);
      expect(environ.split("\n"), `${id} environment`).to.include(`VLLM_API_KEY=${API_KEY}`);
      expect((await request(`${e.url}/v1/models`)).statusCode, `${id} without the key`).to.equal(401);
    }
  });

  it("writes Gate A's generated configuration as private evidence that Narwhal's loader accepts", async () => {
    const { stack } = await sharedFleet();
    const config = (await stack.outputs()).deploymentConfig.value as { files: Record<string, { relativePath: string; sha256: string }> };
    expect(Object.keys(config.files).sort()).to.deep.equal([
      "deployment.env", "engine-launch.local.json", "engine-launch.sources.json", "fleet.json", "hosts.local.json", "ssh.known_hosts",
    ]);
    const root = path.join(PROJECT_ROOT, "runs", "e2e", "evidence");
    for (const f of Object.values(config.files)) expect(fs.statSync(path.join(root, f.relativePath)).mode & 0o777).to.equal(0o600);
    const fleetJson = path.join(root, config.files["fleet.json"].relativePath);
    const python = path.join(PROJECT_ROOT, ".tools", "venv", "bin", "python");
    const loaded = execFileSync(python, ["-c", "import sys; from narwhal.config.loading import load; print(len(load(sys.argv[1]).engines))", fleetJson], {
      encoding: "utf8",
      env: { ...process.env, NARWHAL_ENGINE_API_KEY: "x" },
    });
    expect(loaded.trim()).to.equal("4");
    // Every engine's live proof and cache capture is an immutable record beside it.
    for (const kind of ["generation", "cache-capture"]) {
      const records = fs.readdirSync(path.join(root, kind)).filter((f) => f.endsWith(".json"));
      expect(records.length, kind).to.be.at.least(4);
    }
    const env = fs.readFileSync(path.join(root, config.files["deployment.env"].relativePath), "utf8");
    expect(env).to.include("NARWHAL_NODE_1_URL='http://198.18.0.11:8301'").and.not.include(API_KEY);
  });

  it("groups identical engines by cache signature and budgets the fabric from their captured layout", async () => {
    const { stack, engines } = await sharedFleet();
    const groups = (await stack.outputs()).cacheGroups.value as Array<{
      representative: string;
      members: string[];
      disagreements: unknown[];
      budgets: Array<{ members: string[]; payloadBytes: number; requiredGbps: number }>;
    }>;
    expect(groups).to.have.length(1);
    expect(groups[0].representative).to.equal("e1");
    expect(groups[0].members).to.deep.equal(engines.map((e) => e.id));
    expect(groups[0].disagreements).to.deep.equal([]);
    // tiny-llama: 16 layers x 8 KV heads x 64 head dim x 2 (K and V) x 2 bytes = 32768 B/token; x 1024 tokens;
    // x 8 bits x max(1/s, 1/1s) x 1.25 headroom = 0.33554432 Gbit/s.
    expect(groups[0].budgets).to.have.length(1);
    expect(groups[0].budgets[0].payloadBytes).to.equal(33554432);
    expect(groups[0].budgets[0].requiredGbps).to.be.closeTo(0.33554432, 1e-12);
  });

  it("attests every engine through its sidecar, and the fleet agrees on one engine_contract", async () => {
    const { stack, engines } = await sharedFleet();
    const attestation = (await stack.outputs()).attestation.value as {
      engines: Record<string, { url: string; attestationDigest: string; contractFingerprint: string; evidence: { relativePath: string } }>;
      contract: { fingerprint: string; engines: string[]; contract: Record<string, unknown> };
      fleetDocument: { engines: Array<{ iid: string; attestation_url?: string }>; engine_contract?: Record<string, unknown> };
    };
    expect(Object.keys(attestation.engines).sort()).to.deep.equal(engines.map((e) => e.id).sort());
    for (const e of engines) {
      const a = attestation.engines[e.id];
      expect(a.contractFingerprint, e.id).to.equal(attestation.contract.fingerprint);
      const live = (await request(a.url).then((r) => r.body.json())) as { attestation_digest: string };
      expect(live.attestation_digest, `${e.id}: the sidecar serves what was checked`).to.equal(a.attestationDigest);
      expect(fs.existsSync(path.join(PROJECT_ROOT, "runs", "e2e", "evidence", a.evidence.relativePath)), `${e.id} evidence`).to.equal(true);
      expect(attestation.fleetDocument.engines.find((d) => d.iid === e.id)?.attestation_url).to.equal(a.url);
    }
    expect(attestation.contract.engines.sort()).to.deep.equal(engines.map((e) => e.id).sort());
    expect(attestation.fleetDocument.engine_contract).to.deep.equal(attestation.contract.contract);
  });

  it("changes nothing on a second run", async () => {
    const { stack } = await sharedFleet();
    const preview = await stack.preview({ expectNoChanges: true });
    expect(Object.keys(preview.changeSummary).filter((op) => op !== "same")).to.deep.equal([]);
    await stack.up({ expectNoChanges: true });
  });

  it("starts no router while the preflight fails, serves once it passes, and leaves no process or listener behind on destroy", async () => {
    const { hosts } = await simUp({ timeScale: E2E_TIME_SCALE });
    const [a, b] = hosts;
    const engines = [
      { id: "d1", host: a.alias, gpuIds: [0], port: 8401, attestationPort: 8411, nixlPort: 5801 },
      { id: "d2", host: b.alias, gpuIds: [1], port: 8402, attestationPort: 8412, nixlPort: 5802 },
    ];
    // Its router and Prometheus share sim1 with the shared fleet's: other ports. A TPOT target below any
    // engine's per-token floor fails the preflight's slo gate: the router must not start.
    const stack = await openStack("e2e-destroy", [a, b], engines, {
      router: { port: 8421 },
      observability: { prometheusPort: 9491, freshnessPort: 9492 },
      slo: { tpotS: 0.0001 },
      // Both directed paths at two input lengths: 400 first-token samples through the real CLI.
      calibration: { enabled: true, inputLengths: [128, 1024] },
    });
    // From nothing: a run that stopped half-way may have left this stack's router behind.
    await stack.destroy({ onOutput: () => undefined });
    let failure = "";
    await stack.up({ onOutput: () => undefined }).catch((err: Error) => (failure = err.message));
    expect(failure).to.match(/preflight failed: slo\b[^;]*; the router is not started on it/);
    const routers = ((await stack.exportStack()).deployment.resources as Array<{ urn: string }>).filter((r) => r.urn.endsWith("::fleet-router-host-router-process"));
    expect(routers, "router resources after a failed preflight").to.deep.equal([]);
    expect((await runInHost(a.alias, ["ss", "-Hltn", "sport = :8421"])).stdout.trim(), "router listener").to.equal("");

    // The feasible target: what was measured stays, the preflight passes and the router starts.
    await stack.removeConfig("narwhal-fleet:slo");
    await stack.up({ onOutput: () => undefined });
    expect((await request(`${(await stack.outputs()).routerUrl.value as string}/health`)).statusCode).to.equal(200);
    await expectNarwhalCheckAgrees(stack);
    const deadline = (await stack.outputs()).firstTokenDeadline.value as { proposedS: number; floorS: number; groups: unknown[]; samples: number; evidence: { relativePath: string } };
    // Roles are not pinned, so both directed paths are sampled, each at two lengths.
    expect(deadline.groups).to.have.length(4);
    expect(deadline.samples).to.be.at.least(400);
    expect(deadline.proposedS).to.be.greaterThan(deadline.floorS);
    expect(fs.existsSync(path.join(PROJECT_ROOT, "runs", "e2e-destroy", "evidence", deadline.evidence.relativePath))).to.equal(true);
    const out = (await stack.outputs()).engines.value as Record<string, EngineOut>;
    expect((await request(`${out.d1.url}/health`)).statusCode).to.equal(200);

    await stack.destroy();
    for (const e of engines) {
      const listeners = await runInHost(e.host, ["ss", "-Hltn", `( sport = :${e.port} or sport = :${e.nixlPort} )`]);
      expect(listeners.stdout.trim(), `${e.id} listeners`).to.equal("");
      // Gone, or a zombie the machine's init has not reaped yet: it holds no port, GPU or file.
      expect(pidAlive(out[e.id].pid), `${e.id} process`).to.equal(false);
    }
    const routerLeft = await runInHost(a.alias, ["ss", "-Hltn", "( sport = :8421 or sport = :9491 or sport = :9492 )"]);
    expect(routerLeft.stdout.trim(), "router, Prometheus and freshness exporter listeners").to.equal("");
    await stack.workspace.removeStack("e2e-destroy");
  });
});

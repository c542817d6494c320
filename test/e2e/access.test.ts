/**
 * How the program reaches hosts, through the real CLI on a stack of its own: an engine host named by an
 * ssh_config alias that hops through a bastion (ProxyJump) and logs in with the alias's IdentityFile,
 * and a router host reached by password as a non-root user. Uses the AMD host sim3 (not in the shared
 * fleet), sim1 as the bastion and sim2 (which accepts passwords); ports differ from every other stack's.
 */
import { expect } from "chai";
import * as fs from "node:fs";
import * as path from "node:path";
import type { Stack } from "@pulumi/pulumi/automation";
import type { SimHost } from "../../sim/hosts/host";
import { expectNarwhalCheckAgrees } from "./support/narwhal-check";
import { API_KEY, E2E_TIME_SCALE, PROJECT_ROOT, openStack, sharedFleet } from "./support/stack";
import { simUp } from "../../sim/hosts";

const ALIAS = "amd-behind-bastion";

describe("e2e: ssh_config alias with a jump host, and password login", function () {
  this.timeout(1_200_000);
  let stack: Stack;
  let target: SimHost;
  let password: string;

  before(async () => {
    // The shared fleet first, so both agree on which hosts are up.
    await sharedFleet();
    const all = (await simUp({ hosts: 4, timeScale: E2E_TIME_SCALE })).hosts;
    const [bastion, pw] = ["sim1", "sim2"].map((a) => all.find((h) => h.alias === a)!);
    target = all.find((h) => h.alias === "sim3")!;
    expect(pw.passwordAuth, "sim2 accepts passwords").to.equal(true);
    password = fs.readFileSync(pw.passwordFile, "utf8").trim();

    const sshConfig = path.join(PROJECT_ROOT, ".sim", "e2e-access.ssh_config");
    fs.writeFileSync(
      sshConfig,
      [`Host ${ALIAS}`, `  HostName ${target.address}`, "  User root", `  IdentityFile ${target.privateKeyPath}`, `  ProxyJump root@${bastion.address}`, ""].join("\n"),
    );
    stack = await openStack(
      "e2e-access",
      [target],
      [
        { id: "a1", host: "amd", gpuIds: [0], port: 8501, attestationPort: 8511, nixlPort: 5901 },
        { id: "a2", host: "amd", gpuIds: [1], port: 8502, attestationPort: 8512, nixlPort: 5902 },
      ],
      {
        hosts: [
          { alias: "amd", destination: ALIAS, fabricInterface: target.fabricInterface },
          // A login that is not root keeps the stack's folders under its home.
          { alias: "router", destination: `${pw.passwordUser}@${pw.address}`, auth: "password", fabricInterface: pw.fabricInterface, stateDir: `/home/${pw.passwordUser}/.narwhal-fleet` },
        ],
        model: { servedName: "tiny-llama", checkpointDir: target.modelDir },
        router: { host: "router" },
        ssh: { connectTimeoutS: 30, configFile: path.relative(PROJECT_ROOT, sshConfig) },
        // This file is about logins. Its two engines on one host are profiled side by side (one lane per
        // device, as narwhal-profile runs them), and being simulated they share this machine's two cores:
        // each stalls the other's timings where no reading of the profiler's own machine can see it, so
        // their decode fits need more tries here than a busy machine alone costs (bench:busy-first-up).
        profiling: { fitAttempts: 6 },
      },
    );
    // The engine host's key comes from the alias's IdentityFile only; the router's password is a secret.
    await stack.removeConfig("narwhal-fleet:sshPrivateKeyFile");
    await stack.setConfig("narwhal-fleet:sshPasswords", { value: JSON.stringify({ router: password }), secret: true });
    await stack.destroy({ onOutput: () => undefined });
  });

  after(async () => {
    await stack?.destroy({ onOutput: () => undefined });
  });

  it("discovers both hosts, starts the engine behind the bastion, and keeps the password out of state", async () => {
    const up = await stack.up({ onOutput: () => undefined });
    const outputs = up.outputs;
    const hosts = outputs.hosts.value as Record<string, { hostname: string; accelerator: { vendor: string; count: number }; fabricAddress: string }>;
    expect(hosts.amd).to.deep.include({ fabricAddress: target.address });
    expect(hosts.amd.accelerator).to.deep.include({ vendor: "amd", count: 2 });
    expect(hosts.router.fabricAddress).to.equal("198.18.0.12");
    expect((outputs.deployment.value as { router: string }).router).to.equal("router");

    const engine = (outputs.engines.value as Record<string, { url: string }>).a1;
    expect(engine.url).to.equal(`http://${target.address}:8501`);
    const health = await fetch(`${engine.url}/health`, { headers: { authorization: `Bearer ${API_KEY}` } });
    expect(health.status).to.equal(200);

    // The state at rest (the Automation API's export decrypts secrets, so read the file itself).
    const state = fs.readFileSync(path.join(PROJECT_ROOT, ".state/.pulumi/stacks/narwhal-fleet/e2e-access.json"), "utf8");
    expect(state).to.include("HostDiscovery::fleet-router"); // the stack's live state, not an empty one
    expect(state).to.not.include(password);
    const keyBody = fs.readFileSync(target.privateKeyPath, "utf8").split("\n").slice(2, -2).join("");
    for (const chunk of keyBody.match(/.{24}/g)!) expect(state).to.not.include(chunk);

    // The router and its install live under the non-root login's stateDir.
    const routerUrl = outputs.routerUrl.value as string;
    expect(routerUrl).to.equal("http://198.18.0.12:8321");
    expect((await fetch(`${routerUrl}/health`)).status).to.equal(200);
    await expectNarwhalCheckAgrees(stack, { stateDir: "/home/narwhal/.narwhal-fleet", simHost: "sim2" });

    const again = await stack.preview({ onOutput: () => undefined });
    expect(Object.keys(again.changeSummary).filter((op) => op !== "same")).to.deep.equal([]);
  });
});

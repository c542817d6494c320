/**
 * `npm run import` end to end with the real Pulumi CLI into a throwaway file backend, in a temporary
 * copy of the project's Pulumi.yaml: the stack file it writes holds the runbook's passwords and API key
 * only as `secure:` values, decrypts back to them, carries the plain config the schema accepts, and is
 * never overwritten. The fleet.json it reads is one narwhal-inference's own loader accepts.
 */
import { expect } from "chai";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parseFleetConfig } from "../../lib/config/parse";
import { KNOWN_HOSTS, NODE1_KEY, RUNBOOK_ENV, SECRETS, runbookFleet } from "../unit/import/fixtures";

const ROOT = path.resolve(__dirname, "..", "..");
const PYTHON = path.join(ROOT, ".tools", "venv", "bin", "python");
const STACK = "runbook";

describe("import command (real pulumi CLI, temporary backend)", function () {
  this.timeout(180_000);
  let dir: string;
  let env: NodeJS.ProcessEnv;

  const runImport = (...args: string[]) =>
    spawnSync(process.execPath, ["-r", path.join(ROOT, "tools", "ts-require.js"), path.join(ROOT, "scripts", "import.ts"), ...args], { cwd: dir, env, encoding: "utf8", timeout: 150_000 });
  const pulumi = (...args: string[]) => spawnSync("pulumi", [...args, "--non-interactive"], { cwd: dir, env, encoding: "utf8", timeout: 60_000 });

  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "narwhal-import-"));
    fs.copyFileSync(path.join(ROOT, "Pulumi.yaml"), path.join(dir, "Pulumi.yaml"));
    fs.mkdirSync(path.join(dir, "state"));
    const checkout = path.join(dir, "runbook");
    fs.mkdirSync(path.join(checkout, "config"), { recursive: true });
    fs.mkdirSync(path.join(checkout, "runs"));
    fs.writeFileSync(path.join(checkout, ".env"), RUNBOOK_ENV, { mode: 0o600 });
    fs.writeFileSync(path.join(checkout, "ssh.known_hosts"), KNOWN_HOSTS);
    fs.writeFileSync(path.join(checkout, "config", "fleet.json"), JSON.stringify(runbookFleet(), null, 2));
    fs.writeFileSync(path.join(checkout, "runs", "profiles.json"), "{}\n");
    fs.writeFileSync(path.join(checkout, "runs", "profiles.samples.json"), "{}\n");
    fs.mkdirSync(path.join(checkout, "runs", "calibration"));
    fs.writeFileSync(path.join(checkout, "runs", "calibration", "first-token.json"), "{}\n");
    env = { ...process.env, PULUMI_BACKEND_URL: `file://${path.join(dir, "state")}`, PULUMI_CONFIG_PASSPHRASE: "import-test-passphrase", INIT_CWD: checkout };
    delete env.PULUMI_CONFIG_PASSPHRASE_FILE;
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("the runbook's fleet.json fixture is one narwhal's loader accepts", () => {
    const urls = { NARWHAL_NODE_1_URL: "http://192.168.50.11:8100", NARWHAL_NODE_2_URL: "http://10.30.0.12:8100", NARWHAL_NODE_3_URL: "http://10.30.0.12:8101" };
    const atts = Object.fromEntries(Object.entries(urls).map(([k, v]) => [k.replace("_URL", "_ATTESTATION_URL"), v.replace(/810(\d)$/, "801$1") + "/v1/attestation"]));
    const run = spawnSync(PYTHON, ["-c", "import sys; from narwhal.config.loading import load; c = load(sys.argv[1]); print(','.join(e.iid for e in c.engines))", path.join(dir, "runbook", "config", "fleet.json")], { env: { ...process.env, ...urls, ...atts }, encoding: "utf8", cwd: path.join(dir, "runbook") });
    expect(run.stderr).to.equal("");
    expect(run.stdout.trim()).to.equal("p0,d0,d1");
  });

  it("writes Pulumi.<stack>.yaml with every secret encrypted and the plain config the schema accepts", () => {
    const run = runImport("--env", ".env", "--fleet", "config/fleet.json", "--stack", STACK);
    expect(run.status, run.stderr + run.stdout).to.equal(0);
    for (const s of Object.values(SECRETS)) expect(run.stdout + run.stderr).not.to.include(s);
    expect(run.stdout).to.match(/Not mapped:\n(.|\n)*NARWHAL_RUN_DIR: /);
    expect(run.stdout).to.include("NARWHAL_NODE_1_SSH_PASSWORD -> hosts[0].auth, sshPasswords.node-1 (secret)");

    const file = fs.readFileSync(path.join(dir, `Pulumi.${STACK}.yaml`), "utf8");
    for (const s of [...Object.values(SECRETS), "node1-pa", "router pass"]) expect(file).not.to.include(s);
    expect(file).to.match(/narwhal-fleet:engineApiKey:\n\s+secure: v1:/);
    expect(file).to.match(/narwhal-fleet:sshPasswords:\n\s+node-1:\n\s+secure: v1:\S+\n\s+router:\n\s+secure: v1:/);

    const shown = pulumi("config", "--stack", STACK, "--show-secrets", "--json");
    expect(shown.status, shown.stderr).to.equal(0);
    const config = JSON.parse(shown.stdout) as Record<string, { value: string; objectValue?: unknown; secret: boolean }>;
    expect(config["narwhal-fleet:engineApiKey"]).to.deep.equal({ value: SECRETS.apiKey, secret: true });
    expect((config["narwhal-fleet:sshPasswords"].objectValue)).to.deep.equal({ "node-1": SECRETS.node1, router: SECRETS.router });
    const plain = Object.fromEntries(
      Object.entries(config)
        .filter(([k, v]) => !v.secret && k.startsWith("narwhal-fleet:"))
        .map(([k, v]) => [k.slice("narwhal-fleet:".length), v.objectValue ?? v.value]),
    );
    const spec = parseFleetConfig(plain);
    expect(spec.engines.map((e) => [e.id, e.host, e.role, e.pin])).to.deep.equal([
      ["p0", "node-1", "prefill", true],
      ["d0", "gpu-b", "decode", false],
      ["d1", "gpu-b", "decode", false],
    ]);
    expect(spec.hosts[0].hostKey).to.equal(NODE1_KEY);
    expect(spec.profiling.adoptStore).to.equal(path.join(dir, "runbook", "runs", "profiles.json"));
    expect(spec.calibration).to.deep.include({ enabled: true, adopt: { path: path.join(dir, "runbook", "runs", "calibration", "first-token.json") } });
    expect(spec.slo.ttftS).to.equal(4.5);
  });

  it("refuses to overwrite an existing stack file", () => {
    const before = fs.readFileSync(path.join(dir, `Pulumi.${STACK}.yaml`), "utf8");
    const run = runImport("--env", ".env", "--stack", STACK);
    expect(run.status).to.equal(1);
    expect(run.stderr).to.match(/Pulumi\.runbook\.yaml exists; refusing to overwrite it/);
    expect(fs.readFileSync(path.join(dir, `Pulumi.${STACK}.yaml`), "utf8")).to.equal(before);
  });

  it("writes nothing, and creates no stack, when the .env has a problem", () => {
    fs.writeFileSync(path.join(dir, "runbook", "bad.env"), RUNBOOK_ENV.replace("NARWHAL_ENGINE_PORT=8100", "NARWHAL_ENGINE_PORT=70000"));
    const run = runImport("--env", "bad.env", "--stack", "broken");
    expect(run.status).to.equal(1);
    expect(run.stderr).to.match(/NARWHAL_ENGINE_PORT \(engines\[0\]\.port\): found 70000/);
    expect(fs.existsSync(path.join(dir, "Pulumi.broken.yaml"))).to.equal(false);
    expect(pulumi("stack", "ls", "--json").stdout).not.to.include('"broken"');
  });
});

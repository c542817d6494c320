// The docker CLI runtime's scripts against a fake docker client (no daemon): shell syntax, the bounded
// calls and their named errors, the private env file, the image identity check and stop by label.
// test/providers/docker-cli.test.ts runs the same scripts against the local Docker Engine.
import { expect } from "chai";
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LaunchInputs, renderLaunchPlan } from "../../../lib/launch/plan";
import { ContainerTarget, DockerCliOptions, reconcileScript, startScript, stopScript } from "../../../lib/runtime/docker-cli";
import { envFile } from "../../../lib/shell";

const IMAGE = `sha256:${"a".repeat(64)}`;
const OTHER = `sha256:${"b".repeat(64)}`;
const DIGEST = `localhost:5000/narwhal/engine@sha256:${"c".repeat(64)}`;
const SECRET = "a'b c$d-sekrit-9f2";

const INPUTS: LaunchInputs = {
  engine: { id: "e1", port: 18999, nixlPort: 18998, gpuIds: [0], gpuIdsNamed: true },
  host: { alias: "a", fabricInterface: "lo", fabricAddress: "127.0.0.1", vendor: "none" },
  model: { servedName: "tiny", checkpointDir: "/srv/models/tiny" },
  policy: {
    vllmCommand: "vllm", transport: "tcp", dtype: "model", kvCacheDtype: "auto", blockSize: 16, enforceEager: true,
    maxModelLen: 2048, maxNumSeqs: 8, gpuMemoryUtilization: 0.9, tensorParallelSize: 1, prefixCaching: true, ucxTcpPortRange: "6300-6500",
    kvLeaseDurationS: 30,
  },
};
const PLAN = renderLaunchPlan(INPUTS);
const TARGET: ContainerTarget = { image: IMAGE, modelDir: "/srv/models/tiny", engineId: "e1", stack: "unit" };

// A docker client stand-in: logs its argv, answers from env, keeps a little state in $FAKE_DIR.
const FAKE_DOCKER = `#!/bin/bash
printf '%s\\n' "$*" >> "$FAKE_DIR/calls"
case "$1" in
  image)
    [ -z "\${FAKE_HANG_IMAGE:-}" ] || exec sleep 30
    case "$*" in *@sha256:*) [ -f "$FAKE_DIR/pulled" ] || { echo "Error: No such image: \${@: -1}" >&2; exit 1; } ;; esac
    [ -n "\${FAKE_IMAGE_ID:-}" ] || { echo "Error: No such image: \${@: -1}" >&2; exit 1; }
    case "$*" in *RepoDigests*) printf '%s\\n' \${FAKE_REPO_DIGESTS:-}; exit 0 ;; esac
    echo "$FAKE_IMAGE_ID" ;;
  pull) touch "$FAKE_DIR/pulled"; echo "pulled" ;;
  ps) case "$*" in *id=*) exit 0 ;; esac; printf '%s\\n' \${FAKE_PS:-} ;;
  stop|rm) echo "\${@: -1}" ;;
  *) echo "fake docker: unexpected $*" >&2; exit 1 ;;
esac
`;

const DEADLINES = { pull: 600, start: 300, stop: 60, inspect: 30 };

describe("docker-cli runtime scripts (fake docker client)", () => {
  let dir: string;
  let opts: DockerCliOptions;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "docker-cli-unit-"));
    writeFileSync(join(dir, "docker"), FAKE_DOCKER);
    chmodSync(join(dir, "docker"), 0o755);
    opts = { runDir: join(dir, "run"), dockerCommand: join(dir, "docker"), deadlinesS: DEADLINES };
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  function run(script: string, env: Record<string, string> = {}, input = "") {
    const t0 = Date.now();
    const r = spawnSync("sh", ["-c", script], { input, encoding: "utf8", env: { ...process.env, FAKE_DIR: dir, ...env }, timeout: 60_000 });
    const calls = existsSync(join(dir, "calls")) ? readFileSync(join(dir, "calls"), "utf8").trim().split("\n") : [];
    return { status: r.status, stdout: r.stdout, stderr: r.stderr, calls, seconds: (Date.now() - t0) / 1000 };
  }

  it("renders scripts that bash and dash both parse", () => {
    for (const script of [startScript(PLAN, TARGET, opts), stopScript(PLAN, TARGET, opts), reconcileScript(PLAN, TARGET, opts)]) {
      for (const shell of ["bash", "dash"]) {
        const r = spawnSync(shell, ["-n", "-c", script], { encoding: "utf8" });
        expect(r.status, `${shell}: ${r.stderr}`).to.equal(0);
      }
    }
  });

  it("calls docker only through timeout, with the configured deadlines", () => {
    const start = startScript(PLAN, TARGET, { ...opts, deadlinesS: { pull: 11, start: 22, stop: 33, inspect: 44 } });
    expect(start.match(/"\$docker"/g)).to.have.length(1);
    expect(start).to.match(/timeout -k 5 "\$dk_secs" "\$docker" "\$@"/);
    expect(start).to.include("dk 'runtime.deadlinesS.start' 22 \"run (container narwhal-unit-e1)\" 'run' '--detach'");
    expect(start).to.include("dk 'runtime.deadlinesS.inspect' 44");
    expect(start).to.include("stop -t 33");
    expect(start).to.include("'narwhal.fleet/launch-token='\"$token\"");
    expect(start).to.include("within the start deadline of 22s (runtime.deadlinesS.start)");
    expect(stopScript(PLAN, TARGET, opts).match(/"\$docker"/g)).to.have.length(1);
  });

  it("names the call and the deadline when a docker call overruns it, and starts nothing", () => {
    const r = run(startScript(PLAN, TARGET, { ...opts, deadlinesS: { ...DEADLINES, inspect: 1 } }), { FAKE_HANG_IMAGE: "1" });
    expect(r.status).to.equal(1);
    expect(r.seconds).to.be.lessThan(10);
    expect(r.stderr).to.include(`'docker image inspect ${IMAGE}' did not finish within its deadline of 1s (runtime.deadlinesS.inspect)`);
    expect(r.stderr).to.include("nothing was started");
    expect(r.calls.filter((c) => c.startsWith("run "))).to.deep.equal([]);
  });

  it("writes the API key only to a 0600 docker env file, never on a command line", () => {
    const start = startScript(PLAN, TARGET, opts);
    expect(start).not.to.include("sekrit");
    const r = run(start, {}, envFile({ VLLM_API_KEY: SECRET }));
    expect(r.status).to.equal(1); // the fake has no image: the check stops the start after the env file
    const file = join(opts.runDir, "container.env");
    expect(readFileSync(file, "utf8")).to.equal(`VLLM_API_KEY=${SECRET}\n`);
    expect(statSync(file).mode & 0o777).to.equal(0o600);
    expect(statSync(opts.runDir).mode & 0o777).to.equal(0o700);
    expect(existsSync(join(opts.runDir, "env.in"))).to.equal(false);
    expect(r.calls.join("\n")).not.to.include("sekrit");
    expect(readFileSync(join(opts.runDir, "launch.json"), "utf8")).not.to.include("sekrit");
  });

  it("refuses an image ID the daemon does not have, naming it", () => {
    const r = run(startScript(PLAN, TARGET, opts));
    expect(r.status).to.equal(1);
    expect(r.stderr).to.include(`image identity check failed: runtime.image is ${IMAGE}, but the daemon has no such image`);
  });

  it("refuses an image the daemon resolves to another ID, naming both", () => {
    const r = run(startScript(PLAN, TARGET, opts), { FAKE_IMAGE_ID: OTHER });
    expect(r.status).to.equal(1);
    expect(r.stderr).to.include(`image identity check failed: runtime.image is ${IMAGE}, but docker image inspect resolved it to ${OTHER}`);
    expect(r.calls.filter((c) => c.startsWith("run "))).to.deep.equal([]);
  });

  it("pulls a missing registry digest under the pull deadline and checks RepoDigests", () => {
    const target = { ...TARGET, image: DIGEST };
    const bad = run(startScript(PLAN, target, opts), { FAKE_IMAGE_ID: OTHER, FAKE_REPO_DIGESTS: "localhost:5000/narwhal/engine@sha256:" + "d".repeat(64) });
    expect(bad.calls).to.include(`pull ${DIGEST}`);
    expect(bad.status).to.equal(1);
    expect(bad.stderr).to.include(`runtime.image is ${DIGEST}, but the image docker resolved (${OTHER}) has repo digests: localhost:5000/narwhal/engine@sha256:${"d".repeat(64)}`);
    expect(startScript(PLAN, target, opts)).to.include("dk 'runtime.deadlinesS.pull' 600");
  });

  it("stops by label: docker stop -t <stop deadline>, then docker rm, and removes the env file", () => {
    const stop = stopScript(PLAN, TARGET, opts);
    spawnSync("sh", ["-c", `mkdir -p '${opts.runDir}' && echo K=v > '${opts.runDir}/container.env'`]);
    const r = run(stop, { FAKE_PS: "c1 c2" });
    expect(r.status, r.stderr).to.equal(0);
    expect(r.calls).to.deep.equal([
      "ps -aq --no-trunc --filter label=narwhal.fleet/stack=unit --filter label=narwhal.fleet/engine=e1",
      "stop -t 60 c1",
      "rm -f -v c1",
      "stop -t 60 c2",
      "rm -f -v c2",
    ]);
    expect(existsSync(join(opts.runDir, "container.env"))).to.equal(false);
  });

  it("reconcile with nothing on the daemon reports nothing adopted", () => {
    const r = run(reconcileScript(PLAN, TARGET, opts));
    expect(r.status, r.stderr).to.equal(0);
    expect(JSON.parse(r.stdout)).to.deep.equal({ containerId: null, startedAt: null, launchToken: null, removed: [] });
  });

  it("refuses a relative run dir or a deadline that is not a positive whole number", () => {
    expect(() => startScript(PLAN, TARGET, { ...opts, runDir: "runs/e1" })).to.throw(/absolute/);
    expect(() => stopScript(PLAN, TARGET, { ...opts, deadlinesS: { ...DEADLINES, stop: 0 } })).to.throw(/runtime.deadlinesS.stop/);
  });
});

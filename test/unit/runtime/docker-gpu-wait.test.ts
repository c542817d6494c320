import { expect } from "chai";
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { dockerGpuWaitScript } from "../../../lib/runtime/gpu-claims";
import { LABELS } from "../../../lib/runtime/container-spec";
import type { LaunchPlacement } from "../../../lib/launch/plan";

const onGpus = (gpuIds: number[], vendor: LaunchPlacement["vendor"] = "nvidia"): { engineId: string; placement: LaunchPlacement } => ({
  engineId: "e1",
  placement: { gpuIds, gpuIdsNamed: true, vendor, visibilityVariable: "CUDA_VISIBLE_DEVICES", transport: "tcp", rdmaDevices: [], renderNodes: [] },
});

/**
 * The Docker GPU wait under sh, against a stand-in `docker` whose `ps` prints the running containers
 * listed in a file (engine, gpus label, id), as the real one prints them with the script's --format.
 */
describe("docker GPU wait (run for real under sh with a stand-in docker)", function () {
  let dir: string;
  let running: string;

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "gpu-wait-"));
    running = path.join(dir, "running");
    fs.writeFileSync(running, "");
    fs.writeFileSync(
      path.join(dir, "docker"),
      `#!/bin/sh\n[ "$1" = ps ] || exit 2\necho "$@" > ${dir}/last-args\ncat ${running}\n`,
      { mode: 0o755 },
    );
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  function wait(gpuIds: number[], waitS: number): Promise<{ code: number; stderr: string; ms: number }> {
    const script = `set -eu\ndocker=${dir}/docker\n${dockerGpuWaitScript(onGpus(gpuIds), { stack: "prod", waitS, inspectS: 5, stackLabel: LABELS.stack, engineLabel: LABELS.engine, gpusLabel: LABELS.gpus })}echo started\n`;
    const t0 = Date.now();
    return new Promise((resolve) =>
      execFile("sh", ["-c", script], (err, stdout, stderr) => resolve({ code: err ? (err as { code: number }).code : stdout.includes("started") ? 0 : -1, stderr, ms: Date.now() - t0 })),
    );
  }

  it("starts at once when no other engine's container holds its GPUs, ignoring its own old container", async () => {
    fs.writeFileSync(running, "e1 0,1 c-own\ne2 2,3 c-other\n");
    const r = await wait([0, 1], 5);
    expect(r.code, r.stderr).to.equal(0);
    expect(r.ms).to.be.lessThan(3000);
    expect(fs.readFileSync(path.join(dir, "last-args"), "utf8")).to.include(`label=${LABELS.stack}=prod`);
  });

  it("waits until the other engine's container on its GPU is gone", async () => {
    fs.writeFileSync(running, "e2 1 c-old\n");
    setTimeout(() => fs.writeFileSync(running, ""), 1500);
    const r = await wait([0, 1], 10);
    expect(r.code, r.stderr).to.equal(0);
    expect(r.ms).to.be.greaterThan(1400);
  });

  it("gives up within the named deadline, naming the engine and container that hold the GPU", async () => {
    fs.writeFileSync(running, "e2 1 c-old\n");
    const r = await wait([1], 1);
    expect(r.code).to.equal(1);
    expect(r.stderr).to.equal("engine e1: GPU wait deadline 1s passed and engine e2 (container c-old) holds GPU 1; stop that engine or give the engines disjoint engines[].gpuIds\n");
  });

  it("is empty for an engine without GPUs, and on a host without GPUs (vendor none), whose containers label none", () => {
    const o = { stack: "s", waitS: 1, inspectS: 1, stackLabel: "a", engineLabel: "b", gpusLabel: "c" };
    expect(dockerGpuWaitScript(onGpus([]), o)).to.equal("");
    expect(dockerGpuWaitScript(onGpus([0], "none"), o)).to.equal("");
    expect(dockerGpuWaitScript(onGpus([0]), o)).to.include("gpus=' 0 '");
  });
});

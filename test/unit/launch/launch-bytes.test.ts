// Pins the bytes every runtime runs for one config: the launch plan is resolved in one place, and moving
// where a fact is resolved must not change a single byte of what reaches a host (a new byte is a new
// plan hash or spec hash, which replaces the engine and the evidence bound to it on existing stacks).
import { expect } from "chai";
import { parseFleetConfig } from "../../../lib/config/parse";
import { sha256Json } from "../../../lib/digest";
import { engineLaunchPlan } from "../../../lib/launch/policy";
import type { LaunchPlan } from "../../../lib/launch/plan";
import { launchJsonText } from "../../../lib/image-check/launch-json";
import * as native from "../../../lib/runtime/native";
import * as dockerCli from "../../../lib/runtime/docker-cli";
import { containerRestartScript, nativeRestartScript } from "../../../lib/runtime/restart";
import { containerTarget, dockerCliOptions, dockerContainerSpec } from "../../../lib/runtime/container-fields";

const IMAGE = `sha256:${"1d".repeat(32)}`;

function config(runtime: Record<string, unknown>, launch: Record<string, unknown> = {}, vendor: "nvidia" | "amd" = "nvidia") {
  const spec = parseFleetConfig({
    hosts: [
      { alias: "a", destination: "root@198.18.0.11", fabricInterface: "fab0" },
      { alias: "b", destination: "root@198.18.0.12", fabricInterface: "fab0" },
    ],
    // e1 names one GPU on TCP; e2 takes every GPU of its host over RDMA.
    engines: [
      { id: "e1", host: "a", gpuIds: [1] },
      { id: "e2", host: "b", overrides: { transport: "ucx_rdma", rdma: { hcas: ["mlx5_0:1"], devices: ["/dev/infiniband/uverbs0"] } } },
    ],
    model: { servedName: "tiny", checkpointDir: "/models/tiny" },
    runtime,
    launch,
  });
  // What discovery measured on each host, handed to the one function Gate A and the preview plan with.
  const discovered = (alias: string) => ({
    fabricAddress: alias === "a" ? "198.18.0.11" : "198.18.0.12",
    accelerators: { vendor, product: "GPU X", gpus: [{ index: 0 }, { index: 1 }] },
    model: { dtype: "bfloat16", maxPositionEmbeddings: 32768 },
  });
  return { spec, plans: spec.engines.map((e) => engineLaunchPlan(spec, e, discovered(e.host))) };
}

/** Everything of one plan that reaches a host, by name. */
function bytesOf(kind: "native" | "docker-cli", spec: ReturnType<typeof config>["spec"], plan: LaunchPlan): Record<string, string> {
  const runDir = `/var/lib/narwhal/mock/engines/${plan.engineId}`;
  const out: Record<string, string> = { launchJson: launchJsonText(plan) };
  if (kind === "native") {
    const opts = { runDir, healthTimeoutS: 300, stopTimeoutS: 60 };
    out.start = native.startScript(plan, opts);
    out.stop = native.stopScript(plan, opts);
    out.restart = nativeRestartScript(plan, runDir, { stop: 60, health: 300 });
  } else {
    const opts = dockerCliOptions(spec.runtime, runDir);
    const target = containerTarget(plan, spec.runtime, { modelDir: "/models/tiny", stack: "mock" });
    out.start = dockerCli.startScript(plan, target, opts);
    out.stop = dockerCli.stopScript(plan, target, opts);
    out.gpuWait = dockerCli.gpuWait(plan, target, opts);
    const cliSpec = dockerCli.scriptContainerSpec(plan, target, opts);
    out.cliSpec = JSON.stringify(cliSpec);
    out.dockerSpec = JSON.stringify(dockerContainerSpec(cliSpec, plan.url, spec.runtime.deadlinesS));
    out.restart = containerRestartScript(plan, "docker", "c0", { stop: 60, health: 300 }, { runDir, inspectS: 30 });
  }
  return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, sha256Json(v)]));
}

describe("launch bytes: what reaches a host for one config", () => {
  it("native: launch.json and the start, stop and restart scripts", () => {
    const { spec, plans } = config({ kind: "native" });
    expect(plans.map((p) => bytesOf("native", spec, p))).to.deep.equal(PINNED.native);
  });

  it("docker-cli: launch.json, the scripts and both container specs", () => {
    const { spec, plans } = config({ kind: "docker-cli", image: IMAGE });
    expect(plans.map((p) => bytesOf("docker-cli", spec, p))).to.deep.equal(PINNED.dockerCli);
  });
});

/** sha256Json of each text, recorded from this config; a change here is a change on every host. */
const PINNED = {
  native: [
    {
      launchJson: "sha256:960f676cd10c30e383f96317008f5cad0138794afcf7fd7dd612b00a024f60e5",
      restart: "sha256:2f4c0485b78461ccf3ef03bf1e18b9a25f4c2a066d8d2da22d2d600c9e28b3ed",
      start: "sha256:7d47550226fb4b967dffb0f1eac2f24507a244aebbbdf7115768bcb016d4c615",
      stop: "sha256:647c1e1cafc3d30662b6951d6f7cfffce5f68c9565cd808db1cd1500f987a0ff",
    },
    {
      launchJson: "sha256:2e69efca004413e24de1872c15bf5615034a9128191dbfa9f24ea8f9ef7a235a",
      restart: "sha256:5a0e7a8cdee108f334f55f130c1f1a9a7f11924ad2f3b55e976c4d318345f3be",
      start: "sha256:3f546d5382e65fc3345113facc262bd613930dee37301d790cbb4df4b0e0041f",
      stop: "sha256:12d5041cfea6cdd621ad2a976215e3e11321d28cb2ef61ffe67b429dee656e5b",
    },
  ],
  dockerCli: [
    {
      cliSpec: "sha256:25f601d2f4c9a6f42d4897bd8d2d4c92e2a118212578c6ab5cf8620d76c7ccfb",
      dockerSpec: "sha256:851b823c691571023dfe1da1dde71e7351760b82c48711e6f0ba18fdb4f98ace",
      gpuWait: "sha256:d91408d631658f13fb62d581041789c6eb411f4def40390d8a63155f611f30ec",
      launchJson: "sha256:960f676cd10c30e383f96317008f5cad0138794afcf7fd7dd612b00a024f60e5",
      restart: "sha256:c552a80144c59a282f54ff638815c74dbf9ac91d8b2564b5e3e9e9ad60c937d5",
      start: "sha256:f34220c1c73c76c786fdd9784875ebb958d61166e5e6d3d2f59177fecb8ee928",
      stop: "sha256:fd4f3644c4ed4979978a2dc53f9a8413a9e8ede6253bd1ee9e475a46fe92f5c1",
    },
    {
      cliSpec: "sha256:6db126e1c320d064b74622cfa01eb1f8793d4d00a5362d2ebb6e4510ace72a59",
      dockerSpec: "sha256:710a4fbe8214f6ec046e59d1e5e012aa4bd1909b4d236858c154b182be505d53",
      gpuWait: "sha256:061a9c6de9e4132236833abe3e161ffc6cfbdb27d60b5a9ca38c69b520161388",
      launchJson: "sha256:2e69efca004413e24de1872c15bf5615034a9128191dbfa9f24ea8f9ef7a235a",
      restart: "sha256:b135a163858e5773260cfb65e464deabc1d26a8a8e0cec23be119fe62c79d362",
      start: "sha256:fce4e053a3788a458032091d1716187b580d51cfd5c89de0a8b50e91ca6fc1ea",
      stop: "sha256:061f4aaeea7e4c85f27c4122b945cde315c35451a1c0874b421a4da94da2d978",
    },
  ],
};

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
      launchJson: "sha256:9dac05a720ab3b0f9fe9aabc143522c1624e120ba7a433a9fa94af6ffb257309",
      restart: "sha256:ffedb0a05bf8ed32387988e675f0582268dd2476f319003134dfb0f55a490c7b",
      start: "sha256:8860747b6846e1bb4eb61238b32a59d4f742cc61f94e64f9a21c6af53912c2ee",
      stop: "sha256:647c1e1cafc3d30662b6951d6f7cfffce5f68c9565cd808db1cd1500f987a0ff",
    },
    {
      launchJson: "sha256:ac1234e8945be2b9774b5c21c3f3b53c17985b659d67ce92b44f3eb06602ba03",
      restart: "sha256:052f5b09dea2ce42c604ac0268230d7be72782157b4128e0aaa598a62f3d6b7b",
      start: "sha256:35dc3eaa3c1a62b2cec9d37b8495fdd55f36bddd6d9bb08dae1a7f8bf27f6f33",
      stop: "sha256:12d5041cfea6cdd621ad2a976215e3e11321d28cb2ef61ffe67b429dee656e5b",
    },
  ],
  dockerCli: [
    {
      cliSpec: "sha256:3f81c616078945e3daf85bee1dffeb51774e007b0a3cac1f08376aacf452b343",
      dockerSpec: "sha256:e4302b0595222389aa50f6db750c32e9b2364ecaec6a04ea359d8237c90690db",
      gpuWait: "sha256:d91408d631658f13fb62d581041789c6eb411f4def40390d8a63155f611f30ec",
      launchJson: "sha256:9dac05a720ab3b0f9fe9aabc143522c1624e120ba7a433a9fa94af6ffb257309",
      restart: "sha256:c552a80144c59a282f54ff638815c74dbf9ac91d8b2564b5e3e9e9ad60c937d5",
      start: "sha256:8009e3aa08cc1989eb54c93f8a6107b6847e36ff2d7674a4676a5a3db65a44fa",
      stop: "sha256:0555dd59b37a94862ed3d97d43f48a0c8cfa8192bd76a9789564001dd930fab8",
    },
    {
      cliSpec: "sha256:2e247393a55d2ad271f2cc344c2e0a95c5265cc7909a90ad6ea633db2732b16e",
      dockerSpec: "sha256:12fafb74f76d2a9f4021eed901cec15279b90d4798823646d8ed69662f00e722",
      gpuWait: "sha256:061a9c6de9e4132236833abe3e161ffc6cfbdb27d60b5a9ca38c69b520161388",
      launchJson: "sha256:ac1234e8945be2b9774b5c21c3f3b53c17985b659d67ce92b44f3eb06602ba03",
      restart: "sha256:b135a163858e5773260cfb65e464deabc1d26a8a8e0cec23be119fe62c79d362",
      start: "sha256:5d824550ac3b54f713682c5feb9b57c99fdabfe7a426439d3684580bf90b570d",
      stop: "sha256:5952a5c3cb9858d9d93aecbf75ca5b4cf44331cc8c3873a64bb4147c12e1855d",
    },
  ],
};

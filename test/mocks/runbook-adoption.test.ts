/**
 * The Engine component with a runbook launch directory, under mocks: the survey command reads it, the
 * decision of lib/launch/runbook.ts reaches the native start script, an adoption reaches the generation
 * evidence, and the outcome (with its reason) the engine's outputs. The scripts themselves run for real in
 * test/providers/runbook-launch.test.ts.
 */
import { expect } from "chai";
import type { StoredLogin } from "../../lib/ssh/stored-login";
import { createHash } from "node:crypto";
import * as pulumi from "@pulumi/pulumi";
import type { RuntimeSpec } from "../../lib/config/types";
import { renderLaunchPlan } from "../../lib/launch/plan";
import { surveyEnvKeys } from "../../lib/launch/runbook";
import * as native from "../../lib/runtime/native";
import { surveyScript } from "../../lib/runtime/runbook-survey";
import { launchInputs } from "../unit/launch/inputs";
import { runbookEnv, runbookPlan } from "../unit/launch/runbook-record";

const API_KEY = "mock-runbook-api-key-3e9d";
const RUN = "/srv/runbook/runs/engine-launch-20260101T000000Z-4242";
const BOOT = "6f1c2d3e-0000-4000-8000-000000000001";
const RUNTIME: RuntimeSpec = { kind: "native", image: undefined, vllmCommand: "vllm", dockerCommand: "docker", deadlinesS: { pull: 600, start: 300, stop: 60, inspect: 30 } } as RuntimeSpec;
const CONTAINER = "c0".repeat(32);
const IMAGE = `sha256:${"ab".repeat(32)}`;
const b64 = (s: string) => Buffer.from(s).toString("base64");

const registered: Array<{ type: string; name: string; inputs: Record<string, unknown> }> = [];
let surveyStdout = "";

/**
 * The survey line a live runbook launch of `launch` produces: a native process, or (`backend:
 * "container"`) a running container carrying the launch directory's ownership label.
 */
function surveyLine(launch: Record<string, unknown>): string {
  const text = JSON.stringify(launch, null, 2) + "\n";
  const sha = createHash("sha256").update(text).digest("hex");
  const plan = renderLaunchPlan(launchInputs());
  const all = runbookEnv(plan, API_KEY);
  const env = Object.fromEntries(surveyEnvKeys(plan).filter((k) => k in all).map((k) => [k, all[k]]));
  const launched =
    launch.backend === "native"
      ? {
          checkedJson: b64(JSON.stringify({ plan_sha256: sha, backend: "native" })),
          processJson: b64(JSON.stringify({ pid: 4242, boot_id: BOOT, start_ticks: 777 })),
          live: { pid: 4242, pgid: 4242, startTicks: 777, bootId: BOOT },
        }
      : {
          checkedJson: b64(JSON.stringify({ plan_sha256: sha, image_id: IMAGE })),
          ownerJson: b64(JSON.stringify({ label: "0".repeat(32) })),
          containerId: CONTAINER,
          container: { running: true, image: IMAGE, ownerLabel: "0".repeat(32), startedAt: "2026-01-01T00:00:00.123456789Z" },
        };
  return JSON.stringify({ run: RUN, launchJson: b64(text), ...launched, env });
}

function promiseOf<T>(o: pulumi.Output<T>): Promise<T> {
  return new Promise((resolve) => o.apply(resolve));
}

function byName(name: string) {
  const r = registered.find((x) => x.name === name);
  if (!r) throw new Error(`no resource named ${name}; registered: ${registered.map((x) => x.name).join(", ")}`);
  return r;
}

describe("mocks: an engine with a runbook launch directory", () => {
  let Engine: typeof import("../../components/engine").Engine;

  before(async () => {
    await pulumi.runtime.setMocks(
      {
        newResource(args) {
          registered.push({ type: args.type, name: args.name, inputs: args.inputs });
          if (args.type !== "command:remote:Command") return { id: `${args.name}-id`, state: args.inputs };
          if (args.name.endsWith("-runbook-survey")) return { id: `${args.name}-id`, state: { ...args.inputs, stdout: surveyStdout } };
          // What the start script prints: the adoption record only when it took the runbook's process over.
          const create = String(args.inputs.create);
          if (create.includes("rb_cid=")) {
            const kept = create.includes("[ 'adopt' = adopt ]");
            const adoptedRecord = kept ? `,"adopted":{"launcher":"runbook","run":"${RUN}","planSha256":"x"}` : "";
            return { id: `${args.name}-id`, state: { ...args.inputs, stdout: `{"containerId":"${kept ? CONTAINER : "f".repeat(64)}","startedAt":"2026-01-01T00:00:00Z","launchToken":""${adoptedRecord}}` } };
          }
          const adopted = create.includes("elif [ 'adopt' = adopt ]") ? `,"adopted":{"launcher":"runbook","run":"${RUN}","planSha256":"x"}` : "";
          const pid = adopted ? 4242 : 42;
          return { id: `${args.name}-id`, state: { ...args.inputs, stdout: `{"pid":${pid},"startedAt":"2026-01-01T00:00:00Z"${adopted}}` } };
        },
        call(args) {
          throw new Error(`unexpected call to ${args.token}`);
        },
      },
      "narwhal-fleet",
      "mock",
      false,
    );
    Engine = (await import("../../components/engine")).Engine;
  });

  beforeEach(() => registered.splice(0));

  function engine(name: string, runtime: RuntimeSpec = RUNTIME) {
    return new Engine(name, {
      plan: renderLaunchPlan(launchInputs()),
      hostAlias: "a",
      servedName: "tiny",
      connection: { host: "198.18.0.11", user: "ops", privateKey: pulumi.secret("k") },
      engineApiKey: pulumi.secret(API_KEY),
      runDir: "/var/lib/narwhal-fleet/mock/engines/e1",
      expectedVersion: "0.29.0",
      healthTimeoutS: 300,
      stopTimeoutS: 60,
      runtime,
      modelDir: "/models/tiny",
      stack: "mock",
      runbookRun: RUN,
      knownHosts: { dir: "/fixture/known-hosts", write: () => expect.fail("only the docker backend writes known_hosts, and a runbook engine never runs on it") },
      router: { hostAlias: "a", login: pulumi.output({ host: "198.18.0.11", port: 22, user: "ops" } as StoredLogin), credentials: pulumi.secret({ privateKey: "k" }), binDir: "/var/lib/narwhal-fleet/mock/narwhal/0.7.0/venv/bin", backendPort: 8001 },
    });
  }

  it("surveys the launch directory, adopts the runbook's engine serving the plan, and records the adoption with the generation", async () => {
    const plan = renderLaunchPlan(launchInputs());
    surveyStdout = surveyLine(runbookPlan(plan, { backend: "native" })) + "\n";
    const e = engine("r1");
    expect(await promiseOf(e.pid)).to.equal(4242);
    const outcome = await promiseOf(e.runbook);
    expect(outcome).to.include({ action: "adopt" });
    await promiseOf(e.generation.urn);
    expect(byName("r1-runbook-survey").inputs.create).to.equal(surveyScript({ run: RUN, envKeys: surveyEnvKeys(plan), inspectTimeoutS: 30 }));
    expect(String(byName("r1-process").inputs.create)).to.include("rb_pid=4242");
    expect(byName("r1-generation").inputs.adopted).to.deep.equal({ launcher: "runbook", run: RUN, planSha256: "x" });
    expect(byName("r1-generation").inputs.processIdentity).to.deep.equal({ hostAlias: "a", pid: 4242 });
    expect(JSON.stringify(byName("r1-runbook-survey").inputs)).to.not.include(API_KEY);
  });

  it("replaces a runbook engine running another plan, and the engine's outputs say which field differs", async () => {
    const plan = renderLaunchPlan(launchInputs());
    surveyStdout = surveyLine(runbookPlan(plan, { backend: "native", flags: { "--gpu-memory-utilization": "0.8" } }));
    const e = engine("r2");
    const outcome = await promiseOf(e.runbook);
    expect(outcome!.action).to.equal("replace");
    expect(outcome!.differences).to.deep.equal([{ field: "argv --gpu-memory-utilization", runbook: "0.8", program: "0.9" }]);
    expect(outcome!.reason).to.include("argv --gpu-memory-utilization is 0.8 there, 0.9 here");
    expect(await promiseOf(e.pid)).to.equal(42);
    const takeover = { action: "replace" as const, pid: 4242, startTicks: 777, bootId: BOOT, run: RUN, runbookPlanSha256: undefined, reason: outcome!.reason };
    expect(byName("r2-process").inputs.create).to.equal(native.startScript(plan, { runDir: "/var/lib/narwhal-fleet/mock/engines/e1", healthTimeoutS: 300, stopTimeoutS: 60, runbook: takeover }));
    await promiseOf(e.generation.urn);
    expect(byName("r2-generation").inputs.adopted).to.equal(undefined);
  });

  it("with the docker-cli runtime, surveys the launcher's container and hands the adoption to the container start", async () => {
    const plan = renderLaunchPlan(launchInputs());
    surveyStdout = surveyLine(runbookPlan(plan, { backend: "container", image: IMAGE }));
    const e = engine("r4", { ...RUNTIME, kind: "docker-cli", image: IMAGE });
    const outcome = await promiseOf(e.runbook);
    expect(outcome, outcome?.reason).to.include({ action: "adopt" });
    await promiseOf(e.generation.urn);
    expect(byName("r4-runbook-survey").inputs.create).to.equal(surveyScript({ run: RUN, envKeys: surveyEnvKeys(plan), dockerCommand: "docker", inspectTimeoutS: 30 }));
    expect(String(byName("r4-process").inputs.create)).to.include(`rb_cid=${CONTAINER}`);
    expect(byName("r4-generation").inputs.adopted).to.deep.equal({ launcher: "runbook", run: RUN, planSha256: "x" });
    expect(byName("r4-generation").inputs.processIdentity).to.deep.equal({ hostAlias: "a", containerId: CONTAINER });
  });

  it("the docker provider runtime with a runbook launch directory (refused by the config rules) is refused by the runtime too, before registering anything", async () => {
    const { engineProcess } = await import("../../components/runtime");
    // Nothing but the runtime kind and the directory is read before the refusal.
    expect(() => engineProcess("docker", "r3", { runbookRun: RUN } as never, undefined as never)).to.throw(/engines\[\]\.runbookRun .* native or docker-cli, not docker/);
    expect(registered).to.deep.equal([]);
  });
});

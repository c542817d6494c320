import * as pulumi from "@pulumi/pulumi";
import * as command from "@pulumi/command";
import { cacheExpectations, renderLaunchPlan, LaunchInputs, LaunchPlan } from "../lib/launch/plan";
import { EngineGeneration } from "../dynamic-providers/engine-generation/resource";
import { CacheCapture } from "../dynamic-providers/cache-capture/resource";
import { startScript, stopScript } from "../lib/runtime/native";
import { envFile } from "../lib/shell";

export interface EngineArgs {
  /** The launch inputs, known once the host's discovery has resolved. */
  launch: pulumi.Input<LaunchInputs>;
  role: "prefill" | "decode";
  hostAlias: string;
  servedName: string;
  /** SSH connection to the engine's host, with its verified host key pinned. */
  connection: pulumi.Input<command.types.input.remote.ConnectionArgs>;
  /** Secret: reaches the engine only through its private env file. */
  engineApiKey: pulumi.Input<string>;
  /** Per-engine folder on the host. */
  runDir: string;
  /** The vLLM version the runtime check found: `/version` of the live engine must say the same. */
  expectedVersion: pulumi.Input<string>;
  healthTimeoutS: number;
  stopTimeoutS: number;
}

/**
 * One vLLM engine running as a native process on its host (Gate C's "start" step). Replaced when its
 * launch plan changes; stopped (process group, then the private env file) on delete.
 */
export class Engine extends pulumi.ComponentResource {
  public readonly plan: pulumi.Output<LaunchPlan>;
  public readonly url: pulumi.Output<string>;
  public readonly pid: pulumi.Output<number>;
  public readonly startedAt: pulumi.Output<string>;
  public readonly generation: EngineGeneration;
  public readonly cache: CacheCapture;

  constructor(name: string, args: EngineArgs, opts?: pulumi.ComponentResourceOptions) {
    super("narwhal:engine:Engine", name, {}, opts);
    this.plan = pulumi.output(args.launch).apply((l) => renderLaunchPlan(l as LaunchInputs));
    const runtime = { runDir: args.runDir, healthTimeoutS: args.healthTimeoutS, stopTimeoutS: args.stopTimeoutS };

    const process = new command.remote.Command(
      `${name}-process`,
      {
        connection: args.connection,
        create: this.plan.apply((p) => startScript(p, runtime)),
        delete: this.plan.apply((p) => stopScript(p, runtime)),
        stdin: pulumi.secret(pulumi.output(args.engineApiKey).apply((key) => envFile({ VLLM_API_KEY: key }))),
        triggers: [this.plan.planSha256],
        // Neither script reads the previous output, and most sshd configs refuse extra variables.
        addPreviousOutputInEnv: false,
        logging: "stderr",
      },
      // The replacement binds the same port, so the old process must be gone first.
      { parent: this, deleteBeforeReplace: true },
    );

    const started = process.stdout.apply((out) => JSON.parse(out.trim().split("\n").pop() ?? "{}") as { pid: number; startedAt: string });
    this.url = this.plan.url;
    this.pid = started.pid;
    this.startedAt = started.startedAt;
    const identity = this.pid.apply((pid) => ({ hostAlias: args.hostAlias, pid }));

    // Gate C's live-process proof; a refresh re-probes it, so a restarted engine shows as a new generation.
    this.generation = new EngineGeneration(
      `${name}-generation`,
      {
        engineId: this.plan.engineId,
        hostAlias: args.hostAlias,
        url: this.url,
        planSha256: this.plan.planSha256,
        expectedVersion: args.expectedVersion,
        servedName: args.servedName,
        apiKey: args.engineApiKey,
        processIdentity: identity,
        probeTimeoutS: args.healthTimeoutS,
      },
      { parent: this, dependsOn: [process] },
    );
    // The cache geometry the live engine actually resolved, bound to the generation it was read from.
    this.cache = new CacheCapture(
      `${name}-cache`,
      {
        engineId: this.plan.engineId,
        hostAlias: args.hostAlias,
        url: this.url,
        generationDigest: this.generation.generationDigest,
        planSha256: this.plan.planSha256,
        processIdentity: identity,
        expected: this.plan.apply(cacheExpectations),
        apiKey: args.engineApiKey,
      },
      { parent: this },
    );
    this.registerOutputs({ plan: this.plan, url: this.url, pid: this.pid, startedAt: this.startedAt });
  }
}

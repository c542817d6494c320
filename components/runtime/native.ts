import * as pulumi from "@pulumi/pulumi";
import * as command from "@pulumi/command";
import { startScript, stopScript } from "../../lib/runtime/native";
import { envFile } from "../../lib/shell";
import { lastJsonLine } from "./stdout";
import type { EngineProcess, NativeProcessArgs } from "./types";

/**
 * The engine as a native process on its host (lib/runtime/native.ts): one remote command whose create
 * starts it and whose delete stops its process group. Replaced when the launch plan changes.
 */
export function nativeProcess(name: string, args: NativeProcessArgs, parent: pulumi.Resource): EngineProcess {
  const runtime = { runDir: args.runDir, healthTimeoutS: args.healthTimeoutS, stopTimeoutS: args.stopTimeoutS };
  const process = new command.remote.Command(
    `${name}-process`,
    {
      connection: args.connection,
      create: args.plan.apply((p) => startScript(p, runtime)),
      delete: args.plan.apply((p) => stopScript(p, runtime)),
      stdin: pulumi.secret(pulumi.output(args.engineApiKey).apply((key) => envFile({ VLLM_API_KEY: key }))),
      triggers: [args.plan.planSha256],
      // Neither script reads the previous output, and most sshd configs refuse extra variables.
      addPreviousOutputInEnv: false,
      logging: "stderr",
    },
    // The replacement binds the same port, so the old process must be gone first.
    { parent, deleteBeforeReplace: true },
  );
  const started = process.stdout.apply((out) => lastJsonLine<{ pid: number; startedAt: string }>(out));
  return {
    identity: started.pid.apply((pid) => ({ hostAlias: args.hostAlias, pid })),
    startedAt: started.startedAt,
    resources: [process],
  };
}

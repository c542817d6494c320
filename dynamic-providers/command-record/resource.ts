import * as pulumi from "@pulumi/pulumi";
import { providerShim } from "../shim";
import type { CommandRecordInputs, CommandRecordOutputs } from "./types";

export type CommandRecordArgs = { [K in keyof CommandRecordInputs]: pulumi.Input<CommandRecordInputs[K]> };

/** The evidence record of a gate that runs as command scripts (Gate B's install, Gate G's router). */
export class CommandRecord extends pulumi.dynamic.Resource {
  declare readonly evidence: pulumi.Output<{ relativePath: string; digest: string }>;
  declare readonly recordedAt: pulumi.Output<string>;

  constructor(name: string, args: CommandRecordArgs, opts?: pulumi.CustomResourceOptions) {
    const outputs: Record<keyof Omit<CommandRecordOutputs, keyof CommandRecordInputs>, undefined> = { recordedAt: undefined, evidence: undefined };
    super(providerShim("dynamic-providers/command-record/provider.ts"), name, { ...outputs, ...args }, opts, "narwhal", "CommandRecord");
  }
}

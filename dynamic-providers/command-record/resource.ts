import { dynamicResource } from "../declare";
import type { CommandRecordInputs, CommandRecordOutputs } from "./check";

/** The evidence record of a gate that runs as command scripts (Gate B's install, Gate G's router). */
export class CommandRecord extends dynamicResource<CommandRecordInputs, CommandRecordOutputs>()({
  type: "CommandRecord",
  provider: "dynamic-providers/command-record/provider.ts",
  outputs: ["recordedAt", "evidence"],
}) {}

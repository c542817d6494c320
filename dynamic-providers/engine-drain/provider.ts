/**
 * EngineDrain provider methods, loaded at call time by resource.ts (through dynamic-providers/shim.ts).
 *
 * - create: records the stop key and drains nothing: a new engine has no process yet, and on a stack
 *           that ran before this resource existed its process is not being replaced;
 * - diff:   an update when `stopKey` changed (or is not known yet): the engine's process is replaced in
 *           the same up, after this; an update too when only the login or script changed;
 * - update: with a new stop key, runs the drain on the router host over SSH and records its outcome (a
 *           drain the router refused is an outcome, not a failure: the restart goes ahead as before);
 *           otherwise nothing remote, since the engine is not stopped and must not leave placement;
 * - read, delete: nothing remote (placement belongs to the router).
 */
import type * as pulumi from "@pulumi/pulumi";
import { diffInputs } from "../../lib/evidence/diff";
import { schemaCheck } from "../evidence-provider";
import { engineDrainInputs, type EngineDrainInputs, type EngineDrainOutputs } from "./check";

const UPDATABLE = ["stopKey", "engineId", "hostAlias", "login", "credentials", "script", "timeoutS"] as const;

async function drain(inputs: EngineDrainInputs): Promise<NonNullable<EngineDrainOutputs["lastDrain"]>> {
  const { withSsh } = require("../../lib/ssh/client") as typeof import("../../lib/ssh/client");
  const { OPERATE, sshTarget } = require("../../lib/ssh/login") as typeof import("../../lib/ssh/login");
  const { readLogin } = require("../../lib/ssh/stored-login") as typeof import("../../lib/ssh/stored-login");
  const { parseDrainOutcome } = require("../../lib/router/drain") as typeof import("../../lib/router/drain");
  const target = sshTarget(readLogin(inputs.login, { alias: inputs.hostAlias, ...inputs.credentials }), OPERATE);
  const r = await withSsh(target, (ssh) => ssh.exec("sh -s", { stdin: inputs.script, timeoutS: inputs.timeoutS, name: `drain engine ${inputs.engineId} on the router` }));
  const outcome = r.code === 0 ? parseDrainOutcome(r.stdout) : { drained: false, reason: `the drain script exited ${r.code}: ${r.stderr.trim().split("\n").slice(-3).join(" | ")}` };
  return { ...outcome, at: new Date().toISOString() };
}

export const provider: pulumi.dynamic.ResourceProvider = {
  check: schemaCheck<EngineDrainInputs>(engineDrainInputs),

  async create(inputs: EngineDrainInputs) {
    const outs: EngineDrainOutputs = { ...inputs };
    return { id: `${inputs.hostAlias}-${inputs.engineId}-drain`, outs };
  },

  async diff(_id: string, olds: EngineDrainOutputs, news: EngineDrainInputs) {
    // Never a replacement: a new stop key (or one a preview does not know yet) is an update, which drains.
    return diffInputs(olds, news, [], UPDATABLE);
  },

  async update(_id: string, olds: EngineDrainOutputs, news: EngineDrainInputs) {
    if (news.stopKey === olds.stopKey) return { outs: { ...olds, ...news } };
    return { outs: { ...news, lastDrain: await drain(news) } satisfies EngineDrainOutputs };
  },
};

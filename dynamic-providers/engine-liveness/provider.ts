/**
 * EngineLiveness provider methods, loaded at call time by resource.ts (through dynamic-providers/shim.ts).
 *
 * - create: mints a new epoch and probes nothing (the engine starts after it, from its epoch);
 * - read:   one bounded `/health` probe (lib/engine/liveness.ts), recorded as observedState/Detail;
 * - diff:   replaces when a refresh saw the engine down (replace key "serving"), so the new epoch
 *           restarts its process in the same up; other input changes only update, and values a
 *           preview does not know yet are none;
 * - update: keeps the epoch; delete: nothing remote (the engine belongs to its runtime resource).
 */
import type * as pulumi from "@pulumi/pulumi";
import { NOT_SERVING, observeLiveness, restartReason } from "../../lib/engine/liveness";
import { diffInputs, UNKNOWN } from "../diff";
import type { EngineLivenessInputs, EngineLivenessOutputs } from "./types";

const UPDATABLE = ["engineId", "hostAlias", "url", "healthDeadlineS"] as const;

export const provider: pulumi.dynamic.ResourceProvider = {
  async create(inputs: EngineLivenessInputs) {
    const { randomBytes } = require("node:crypto") as typeof import("node:crypto");
    const epoch = randomBytes(8).toString("hex");
    return { id: `${inputs.hostAlias}-${inputs.engineId}-${epoch}`, outs: { ...inputs, epoch } satisfies EngineLivenessOutputs };
  },

  async read(id: string, props: EngineLivenessOutputs) {
    const { withEngineHttp } = require("../engine-generation/http") as typeof import("../engine-generation/http");
    // Whichever process owns the endpoint: the probe is about the endpoint, not a proved process.
    const subject = { engineId: props.engineId, hostAlias: props.hostAlias, url: props.url, processIdentity: { hostAlias: props.hostAlias } };
    const seen = await withEngineHttp(subject, undefined, (ask) => observeLiveness(ask, props.url, props.healthDeadlineS), props.healthDeadlineS);
    return { id, props: { ...props, ...seen, observedAt: new Date().toISOString() } };
  },

  async diff(_id: string, olds: EngineLivenessOutputs, news: EngineLivenessInputs) {
    if (restartReason(olds) !== undefined) return { changes: true, replaces: [NOT_SERVING], deleteBeforeReplace: false };
    // A value a preview cannot know yet (a host being discovered again) is not a change to forecast: this
    // holds no evidence, and the up diffs again with the known value.
    const known = UPDATABLE.filter((k) => news[k] !== (UNKNOWN as unknown));
    return diffInputs(olds, news, [], known);
  },

  async update(_id: string, olds: EngineLivenessOutputs, news: EngineLivenessInputs) {
    return { outs: { ...olds, ...news } };
  },
};

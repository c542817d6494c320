/**
 * Liveness provider methods, loaded at call time by resource.ts (through dynamic-providers/shim.ts).
 *
 * - create: mints a new epoch and probes nothing (the service starts after it, from its epoch);
 * - read:   one bounded health probe (lib/liveness.ts), recorded as observedState/Detail;
 * - diff:   replaces when a refresh saw the service down (replace key "serving"), so the new epoch
 *           restarts its process in the same up; other input changes only update, and values a
 *           preview does not know yet are none;
 * - update: keeps the epoch; delete: nothing remote (the process belongs to its own resource).
 */
import type * as pulumi from "@pulumi/pulumi";
import { NOT_SERVING, observeLiveness, restartReason } from "../../lib/liveness";
import { UNKNOWN } from "../../lib/unknown";
import { diffInputs } from "../../lib/evidence/diff";
import { schemaCheck } from "../evidence-provider";
import { livenessInputs, type LivenessInputs, type LivenessOutputs } from "./check";

const UPDATABLE = ["service", "name", "hostAlias", "url", "healthDeadlineS"] as const;

export const provider: pulumi.dynamic.ResourceProvider = {
  check: schemaCheck<LivenessInputs>(livenessInputs),

  async create(inputs: LivenessInputs) {
    const { randomBytes } = require("node:crypto") as typeof import("node:crypto");
    const epoch = randomBytes(8).toString("hex");
    return { id: `${inputs.hostAlias}-${inputs.name}-${epoch}`, outs: { ...inputs, epoch } satisfies LivenessOutputs };
  },

  async read(id: string, props: LivenessOutputs) {
    const { withEngineHttp } = require("../engine-http") as typeof import("../engine-http");
    // Records made when only engines had one (EngineLiveness) name the engine as `engineId`.
    const { service = "engine", name = (props as { engineId?: string }).engineId ?? "engine" } = props;
    // Whichever process owns the endpoint: the probe is about the endpoint, not a proved process.
    const subject = { engineId: name, hostAlias: props.hostAlias, url: props.url, processIdentity: { hostAlias: props.hostAlias } };
    const seen = await withEngineHttp(subject, undefined, (ask) => observeLiveness(ask, props.url, props.healthDeadlineS, service), props.healthDeadlineS);
    return { id, props: { ...props, ...seen, observedAt: new Date().toISOString() } };
  },

  async diff(_id: string, olds: LivenessOutputs, news: LivenessInputs) {
    if (restartReason(olds) !== undefined) return { changes: true, replaces: [NOT_SERVING], deleteBeforeReplace: false };
    // A value a preview cannot know yet (a host being discovered again) is not a change to forecast: this
    // holds no evidence, and the up diffs again with the known value.
    const known = UPDATABLE.filter((k) => news[k] !== (UNKNOWN as unknown));
    return diffInputs(olds, news, [], known);
  },

  async update(_id: string, olds: LivenessOutputs, news: LivenessInputs) {
    return { outs: { ...olds, ...news } };
  },
};

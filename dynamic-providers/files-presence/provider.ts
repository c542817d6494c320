/**
 * FilesPresence provider methods, loaded at call time by resource.ts (through dynamic-providers/shim.ts).
 *
 * - create: mints a new epoch and looks at nothing (the commands that write the files run after it);
 * - read:   one bounded look over SSH for every file (../host-look.ts), recorded as observedState/Detail;
 *           a host that cannot be asked is `unknown`, never `gone`;
 * - diff:   replaces when a refresh found a file gone (replace key "files"), so the new id writes them
 *           all again in the same up; other input changes only update;
 * - update: keeps the epoch; delete: nothing remote (the files belong to their commands).
 */
import type * as pulumi from "@pulumi/pulumi";
import { diffInputs } from "../../lib/evidence/diff";
import { UNKNOWN } from "../../lib/unknown";
import { schemaCheck } from "../evidence-provider";
import { filesPresenceInputs, type FilesPresenceInputs, type FilesPresenceOutputs } from "./check";

const UPDATABLE = ["hostAlias", "stack", "login", "credentials", "owner", "paths", "probeTimeoutS"] as const;
/** The replace key `pulumi preview` shows when a refresh found a file gone. */
export const FILES_GONE = "files";

export const provider: pulumi.dynamic.ResourceProvider = {
  check: schemaCheck<FilesPresenceInputs>(filesPresenceInputs),

  async create(inputs: FilesPresenceInputs) {
    const { randomBytes } = require("node:crypto") as typeof import("node:crypto");
    const epoch = randomBytes(8).toString("hex");
    return { id: `${inputs.hostAlias}-${inputs.owner}-files-${epoch}`, outs: { ...inputs, epoch } satisfies FilesPresenceOutputs };
  },

  async read(id: string, props: FilesPresenceOutputs) {
    const { lookForPaths } = require("../host-look") as typeof import("../host-look");
    const seen = await lookForPaths(props, props.paths.map((path) => ({ path })), props.probeTimeoutS, `look for the ${props.owner} files`);
    const observedDetail =
      seen.observedState === "gone"
        ? `the ${props.owner} files on host ${props.hostAlias} are gone: ${seen.missing.join(", ")}`
        : seen.observedState === "present"
          ? `every ${props.owner} file is there`
          : seen.observedDetail;
    return { id, props: { ...props, observedState: seen.observedState, observedDetail, observedAt: seen.observedAt } };
  },

  async diff(_id: string, olds: FilesPresenceOutputs, news: FilesPresenceInputs) {
    if (olds.observedState === "gone") return { changes: true, replaces: [FILES_GONE], deleteBeforeReplace: false };
    // A value a preview cannot know yet (a host being discovered again) is not a change to forecast.
    const known = UPDATABLE.filter((k) => news[k] !== (UNKNOWN as unknown));
    return diffInputs(olds, news, [], known);
  },

  async update(_id: string, olds: FilesPresenceOutputs, news: FilesPresenceInputs) {
    return { outs: { ...olds, ...news } satisfies FilesPresenceOutputs };
  },
};

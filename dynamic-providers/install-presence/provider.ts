/**
 * InstallPresence provider methods, loaded at call time by resource.ts (through dynamic-providers/shim.ts).
 *
 * - create: records nothing remote: the install's command has just run;
 * - read:   one bounded look over SSH for the install's marker and entry points (lib/router/install.ts),
 *           recorded as observedState/Detail; a host that cannot be asked is `unknown`, never `gone`;
 * - diff:   an update when a refresh found the install gone, so that the same `up` installs it again
 *           before anything that runs from it starts; other input changes only update;
 * - update: after a refresh found it gone, runs the install script again (it installs, or adopts what
 *           another run left) and records the marker it printed; otherwise nothing remote;
 * - delete: nothing remote (the install's command removes it).
 */
import type * as pulumi from "@pulumi/pulumi";
import { diffInputs } from "../../lib/evidence/diff";
import { UNKNOWN } from "../../lib/unknown";
import { schemaCheck } from "../evidence-provider";
import { installPresenceInputs, type InstallPresenceInputs, type InstallPresenceOutputs } from "./check";

const UPDATABLE = ["hostAlias", "stack", "login", "credentials", "install", "probeTimeoutS"] as const;

/** The install script's own bound, plus the login and the marker's print. */
const REINSTALL_SLACK_S = 60;

export const provider: pulumi.dynamic.ResourceProvider = {
  check: schemaCheck<InstallPresenceInputs>(installPresenceInputs),

  async create(inputs: InstallPresenceInputs) {
    const outs: InstallPresenceOutputs = { ...inputs, observedState: "present" };
    return { id: `${inputs.hostAlias}-narwhal-presence`, outs };
  },

  async read(id: string, props: InstallPresenceOutputs) {
    const { installPaths, revisionDir } = require("../../lib/router/install") as typeof import("../../lib/router/install");
    const { lookForPaths } = require("../host-look") as typeof import("../host-look");
    const folder = revisionDir(props.install);
    const seen = await lookForPaths(props, installPaths(props.install), props.probeTimeoutS, `look for the narwhal install in ${folder}`);
    const observedDetail =
      seen.observedState === "gone"
        ? `the narwhal install on host ${props.hostAlias} is gone: ${folder} lacks ${seen.missing.map((p) => p.slice(folder.length + 1)).join(", ")}`
        : seen.observedState === "present"
          ? `the install is in ${folder}`
          : seen.observedDetail;
    return { id, props: { ...props, observedState: seen.observedState, observedDetail, observedAt: seen.observedAt } };
  },

  async diff(_id: string, olds: InstallPresenceOutputs, news: InstallPresenceInputs) {
    if (olds.observedState === "gone") return { changes: true, replaces: [], deleteBeforeReplace: false };
    // A value a preview cannot know yet (a host being discovered again) is not a change to forecast.
    const known = UPDATABLE.filter((k) => news[k] !== (UNKNOWN as unknown));
    return diffInputs(olds, news, [], known);
  },

  async update(_id: string, olds: InstallPresenceOutputs, news: InstallPresenceInputs) {
    if (olds.observedState !== "gone") return { outs: { ...olds, ...news } satisfies InstallPresenceOutputs };
    const { installScript } = require("../../lib/router/install") as typeof import("../../lib/router/install");
    const { lastJsonLine } = require("../../lib/json-line") as typeof import("../../lib/json-line");
    const { runOnHost } = require("../host-look") as typeof import("../host-look");
    const r = await runOnHost(news, installScript(news.install), news.install.timeoutS + REINSTALL_SLACK_S, "install narwhal again");
    if (r.code !== 0) {
      throw new Error(`${olds.observedDetail}; installing it again failed (exit ${r.code}): ${r.stderr.trim().split("\n").slice(-3).join(" | ")}`);
    }
    const at = new Date().toISOString();
    const outs: InstallPresenceOutputs = { ...news, observedState: "present", observedDetail: `installed again at ${at}`, observedAt: at, lastReinstall: { at, marker: lastJsonLine(r.stdout) } };
    return { outs };
  },
};

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

async function onHost(inputs: InstallPresenceInputs, script: string, timeoutS: number, name: string) {
  const { withSsh } = require("../../lib/ssh/client") as typeof import("../../lib/ssh/client");
  const { OPERATE, sshTarget } = require("../../lib/ssh/login") as typeof import("../../lib/ssh/login");
  const { readLogin } = require("../../lib/ssh/stored-login") as typeof import("../../lib/ssh/stored-login");
  const target = sshTarget(readLogin(inputs.login, { alias: inputs.hostAlias, ...inputs.credentials }), OPERATE);
  return withSsh(target, (ssh) => ssh.exec("sh -s", { stdin: script, timeoutS, name }));
}

export const provider: pulumi.dynamic.ResourceProvider = {
  check: schemaCheck<InstallPresenceInputs>(installPresenceInputs),

  async create(inputs: InstallPresenceInputs) {
    const outs: InstallPresenceOutputs = { ...inputs, observedState: "present" };
    return { id: `${inputs.hostAlias}-narwhal-presence`, outs };
  },

  async read(id: string, props: InstallPresenceOutputs) {
    const { presenceScript, missingParts, revisionFolder } = require("../../lib/router/install") as typeof import("../../lib/router/install");
    const folder = `${props.install.installDir}/${revisionFolder(props.install.source)}`;
    const observedAt = new Date().toISOString();
    try {
      const r = await onHost(props, presenceScript(props.install), props.probeTimeoutS, `look for the narwhal install in ${folder}`);
      if (r.code !== 0) throw new Error(`the look exited ${r.code}: ${r.stderr.trim().split("\n").slice(-2).join(" | ")}`);
      const missing = missingParts(r.stdout);
      const seen: Pick<InstallPresenceOutputs, "observedState" | "observedDetail"> =
        missing.length === 0
          ? { observedState: "present", observedDetail: `the install is in ${folder}` }
          : { observedState: "gone", observedDetail: `the narwhal install on host ${props.hostAlias} is gone: ${folder} lacks ${missing.join(", ")}` };
      return { id, props: { ...props, ...seen, observedAt } };
    } catch (error) {
      // Whatever else touches the host names the refusal; this only declines to call the install gone.
      return { id, props: { ...props, observedState: "unknown", observedDetail: `host ${props.hostAlias} could not be asked: ${(error as Error).message}`, observedAt } };
    }
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
    const r = await onHost(news, installScript(news.install), news.install.timeoutS + REINSTALL_SLACK_S, "install narwhal again");
    if (r.code !== 0) {
      throw new Error(`${olds.observedDetail}; installing it again failed (exit ${r.code}): ${r.stderr.trim().split("\n").slice(-3).join(" | ")}`);
    }
    const at = new Date().toISOString();
    const outs: InstallPresenceOutputs = { ...news, observedState: "present", observedDetail: `installed again at ${at}`, observedAt: at, lastReinstall: { at, marker: lastJsonLine(r.stdout) } };
    return { outs };
  },
};

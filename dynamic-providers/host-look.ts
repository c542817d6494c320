/**
 * A provider's look at its host over SSH, for the resources that check at refresh that what they made is
 * still there (install-presence, files-presence). Loaded by them at call time.
 */
import type { StoredLogin } from "../lib/ssh/stored-login";
import type { ExpectedPath } from "../lib/host-paths";

export interface HostLookInputs {
  hostAlias: string;
  login: StoredLogin;
  credentials: { privateKey?: string; password?: string };
}

/** Runs `script` on the host through `sh -s`, bounded by `timeoutS`, under the host's pinned key. */
export async function runOnHost(inputs: HostLookInputs, script: string, timeoutS: number, name: string) {
  const { withSsh } = require("../lib/ssh/client") as typeof import("../lib/ssh/client");
  const { OPERATE, sshTarget } = require("../lib/ssh/login") as typeof import("../lib/ssh/login");
  const { readLogin } = require("../lib/ssh/stored-login") as typeof import("../lib/ssh/stored-login");
  const target = sshTarget(readLogin(inputs.login, { alias: inputs.hostAlias, ...inputs.credentials }), OPERATE);
  return withSsh(target, (ssh) => ssh.exec("sh -s", { stdin: script, timeoutS, name }));
}

export interface Seen {
  observedState: "present" | "gone" | "unknown";
  /** The expected paths the host lacks (none when it could not be asked). */
  missing: string[];
  /** Why the host could not be asked, when it could not. */
  observedDetail?: string;
  observedAt: string;
}

/**
 * Which of `paths` the host lacks. A host that cannot be asked (unreachable, refused, its key changed) is
 * `unknown`, never `gone`: whatever else touches the host names the refusal.
 */
export async function lookForPaths(inputs: HostLookInputs, paths: ReadonlyArray<ExpectedPath>, timeoutS: number, name: string): Promise<Seen> {
  const { presenceScript, missingPaths } = require("../lib/host-paths") as typeof import("../lib/host-paths");
  const observedAt = new Date().toISOString();
  try {
    const r = await runOnHost(inputs, presenceScript(paths), timeoutS, name);
    if (r.code !== 0) throw new Error(`${name} exited ${r.code}: ${r.stderr.trim().split("\n").slice(-2).join(" | ")}`);
    const missing = missingPaths(r.stdout);
    return { observedState: missing.length === 0 ? "present" : "gone", missing, observedAt };
  } catch (error) {
    return { observedState: "unknown", observedDetail: `host ${inputs.hostAlias} could not be asked: ${(error as Error).message}`, missing: [], observedAt };
  }
}

/**
 * Running things inside a simulated host without SSH: nsenter into the anchor's mount, UTS and network
 * namespaces. For tests that change routes, MTU or `tc` throttles, restart processes, or start
 * long-running servers.
 */
import { ChildProcess, spawn, SpawnOptions } from "node:child_process";
import { HOST_PATH } from "./constants";
import { liveAnchorPid } from "./anchor";
import { run, RunOptions, RunResult, SimError } from "./exec";
import { hostPaths } from "./paths";

function anchorOf(alias: string): number {
  const pid = liveAnchorPid(alias, hostPaths(alias));
  if (!pid) throw new SimError("SIM_HOST_DOWN", `host ${alias} is not up (no live namespace anchor); run \`npm run sim -- up\``);
  return pid;
}

/** argv that enters the host; a string command runs under `sh -c`. */
function enterArgv(alias: string, cmd: string | readonly string[]): string[] {
  const enter = ["nsenter", `--target=${anchorOf(alias)}`, "--mount", "--uts", "--net", "--"];
  return typeof cmd === "string" ? [...enter, "sh", "-c", cmd] : [...enter, ...cmd];
}

/** The environment a login on the host would have (the host's PATH, root's home) plus `extra`. */
function hostEnv(extra?: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return { PATH: HOST_PATH, HOME: "/root", USER: "root", LANG: "C.UTF-8", ...extra };
}

/**
 * Runs a command inside the host and waits for it. Rejects on a non-zero exit unless `allowFail`.
 * Example: `await runInHost("sim1", ["tc", "qdisc", "add", "dev", "fab0", "root", "tbf", "rate", "500mbit", "burst", "64kb", "latency", "50ms"])`.
 */
export function runInHost(alias: string, cmd: string | readonly string[], opts: RunOptions = {}): Promise<RunResult> {
  return run(enterArgv(alias, cmd), { what: `${alias}: ${typeof cmd === "string" ? cmd : cmd.join(" ")}`, ...opts, env: hostEnv(opts.env) });
}

/** Starts a long-running process inside the host and returns it (the caller stops it, or `down` does). */
export function spawnInHost(alias: string, argv: readonly string[], opts: SpawnOptions = {}): ChildProcess {
  const [file, ...args] = enterArgv(alias, argv);
  return spawn(file, args, { stdio: "ignore", ...opts, env: hostEnv(opts.env) });
}

/**
 * A docker host's own Docker Engine: `dockerd` (with the containerd it supervises) started inside the
 * host's mount, UTS and network namespaces, as a GPU host runs its own daemon. What that buys over the
 * machine's daemon: a `--network host` container binds the host's fabric address, `--mount` sources
 * and `--device` paths resolve in the host's file system (its /models, its fake /dev nodes), and on
 * NVIDIA hosts `--gpus` goes through the host's simulated NVIDIA container runtime hook (shims.ts).
 *
 * Everything the daemon keeps is the host's: its socket, pid and state under the host's private /run
 * (anchor.ts), its data root under .sim/hosts/<alias>/docker, its containers under the cgroup parent
 * `narwhal-sim-<alias>`. The machine's own daemon is neither used nor changed. The daemon starts with
 * no images: load the engine image with {@link loadDockerImage}.
 */
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import {
  DOCKER_CGROUP_PREFIX,
  DOCKER_IMAGE_LOAD_TIMEOUT_MS,
  DOCKERD_READY_TIMEOUT_MS,
  DOCKERD_STOP_TIMEOUT_MS,
  HOST_PATH,
  PROCESS_EXIT_TIMEOUT_MS,
} from "./constants";
import { pidAlive, run, SimError, waitFor } from "./exec";
import { liveAnchorPid } from "./anchor";
import { runInHost } from "./in-host";
import { hostPaths, HostPaths } from "./paths";
import type { HostSpec } from "../topology";

/** Where the host's docker CLI finds its daemon: the default path, inside the host's own /run. */
export const HOST_DOCKER_SOCKET = "/run/docker.sock";

export const dockerCgroupParent = (alias: string): string => `${DOCKER_CGROUP_PREFIX}${alias}`;

/**
 * The daemon's settings. No bridge and no iptables: engines use the host network, discovery's
 * short-lived containers `--network none`, and the host's netns keeps only the harness's addresses.
 */
export function dockerdConfig(alias: string, p: HostPaths): Record<string, unknown> {
  return {
    hosts: [`unix://${HOST_DOCKER_SOCKET}`],
    "data-root": p.dockerDataRoot,
    pidfile: p.dockerdPid,
    "cgroup-parent": dockerCgroupParent(alias),
    bridge: "none",
    iptables: false,
    "ip-forward": false,
    "ip-masq": false,
  };
}

/** Writes the daemon config and an empty data root: a docker host is built from nothing. */
export function writeDockerFiles(alias: string, p: HostPaths): void {
  fs.rmSync(p.dockerDataRoot, { recursive: true, force: true });
  fs.mkdirSync(p.dockerDataRoot, { recursive: true, mode: 0o710 });
  fs.writeFileSync(p.dockerConfig, `${JSON.stringify(dockerdConfig(alias, p), null, 2)}\n`);
  fs.rmSync(p.nvidiaHookLog, { force: true });
}

/** dockerd's pid from its pid file, when that process is alive and is dockerd. */
export function liveDockerdPid(p: HostPaths): number | undefined {
  if (!fs.existsSync(p.dockerdPid)) return undefined;
  const pid = Number(fs.readFileSync(p.dockerdPid, "utf8").trim());
  if (!Number.isInteger(pid) || pid <= 0 || !pidAlive(pid)) return undefined;
  try {
    return fs.readFileSync(`/proc/${pid}/comm`, "utf8").trim() === "dockerd" ? pid : undefined;
  } catch {
    return undefined;
  }
}

const enter = (pid: number): string[] => ["nsenter", `--target=${pid}`, "--mount", "--uts", "--net", "--"];
const hostEnv: NodeJS.ProcessEnv = { PATH: HOST_PATH, HOME: "/root", LANG: "C.UTF-8" };

/**
 * Starts dockerd in the anchor's namespaces, with the host's PATH (so the NVIDIA hook shim is found, as
 * the real toolkit's is), and waits (bounded) until the host's docker CLI gets an answer.
 */
export async function startDockerd(host: HostSpec, p: HostPaths, anchorPid: number): Promise<number> {
  fs.rmSync(p.dockerdPid, { force: true });
  const log = fs.openSync(p.dockerdLog, "w");
  const [file, ...args] = [...enter(anchorPid), "dockerd", "--config-file", p.dockerConfig];
  const child = spawn(file, args, {
    env: hostEnv,
    detached: true,
    stdio: ["ignore", log, log],
  });
  fs.closeSync(log);
  let exited: string | undefined;
  child.once("exit", (code, signal) => (exited = `exit ${code ?? signal}`));
  child.unref();
  const logTail = () => (fs.existsSync(p.dockerdLog) ? fs.readFileSync(p.dockerdLog, "utf8").trim().split("\n").slice(-5).join("\n") : "");
  let outcome: "ready" | "ended";
  try {
    outcome = await waitFor(`${host.alias}: its Docker Engine answers (DOCKERD_READY_TIMEOUT_MS)`, DOCKERD_READY_TIMEOUT_MS, async () => {
      if (exited) return "ended" as const;
      const r = await run([...enter(anchorPid), "docker", "version", "--format", "{{.Server.Version}}"], { env: hostEnv, allowFail: true, timeoutMs: 5_000 });
      return r.code === 0 && liveDockerdPid(p) ? ("ready" as const) : undefined;
    });
  } catch (err) {
    throw new SimError("SIM_HOST_SETUP", `${(err as Error).message}; last lines of ${p.dockerdLog}:\n${logTail()}`);
  }
  if (outcome === "ended") throw new SimError("SIM_HOST_SETUP", `${host.alias}: dockerd ended (${exited}); last lines of ${p.dockerdLog}:\n${logTail()}`);
  return liveDockerdPid(p)!;
}

/**
 * Removes every container of the host's daemon, then stops the daemon (SIGTERM, SIGKILL after
 * DOCKERD_STOP_TIMEOUT_MS). Containers with a network of their own are outside the host's netns, so
 * the netns-wide kill of `down` would miss them: they go first, through the daemon, and whatever is
 * left is found through the cgroup parent ({@link removeDockerCgroups}).
 */
export async function stopDockerd(alias: string, p: HostPaths): Promise<void> {
  const pid = liveDockerdPid(p);
  if (!pid) return;
  const opts = { env: hostEnv, allowFail: true, timeoutMs: DOCKERD_STOP_TIMEOUT_MS };
  try {
    const ids = (await run([...enter(pid), "docker", "ps", "-aq"], opts)).stdout.split(/\s+/).filter(Boolean);
    if (ids.length > 0) await run([...enter(pid), "docker", "rm", "-f", ...ids], opts);
  } catch {
    // a daemon that does not answer is stopped below all the same
  }
  try {
    process.kill(pid, "SIGTERM");
    await waitFor(`${alias}: dockerd ${pid} exit (DOCKERD_STOP_TIMEOUT_MS)`, DOCKERD_STOP_TIMEOUT_MS, async () => (pidAlive(pid) ? undefined : true));
  } catch {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  fs.rmSync(p.dockerdPid, { force: true });
}

/** The host's container cgroups, one per controller hierarchy (v1) or the one tree (v2). */
function cgroupDirs(alias: string): string[] {
  const root = "/sys/fs/cgroup";
  const name = dockerCgroupParent(alias);
  const candidates = [path.join(root, name)];
  try {
    for (const c of fs.readdirSync(root)) candidates.push(path.join(root, c, name));
  } catch {
    return [];
  }
  const seen = new Set<string>();
  return candidates.filter((d) => {
    try {
      const real = fs.realpathSync(d);
      if (seen.has(real) || !fs.statSync(real).isDirectory()) return false;
      seen.add(real);
      return true;
    } catch {
      return false;
    }
  });
}

function subtree(dir: string): string[] {
  const out: string[] = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) if (e.isDirectory()) out.push(...subtree(path.join(dir, e.name)));
  out.push(dir);
  return out; // deepest first
}

function pidsIn(dirs: string[]): number[] {
  const pids = new Set<number>();
  for (const d of dirs) {
    try {
      for (const l of fs.readFileSync(path.join(d, "cgroup.procs"), "utf8").split("\n")) if (Number(l) > 0) pids.add(Number(l));
    } catch {
      // removed meanwhile
    }
  }
  return [...pids];
}

/**
 * Kills whatever still runs in the host's container cgroups and removes them. Returns how many
 * processes were signalled.
 */
export async function removeDockerCgroups(alias: string): Promise<number> {
  const trees = cgroupDirs(alias).map(subtree);
  const dirs = trees.flat();
  if (dirs.length === 0) return 0;
  const pids = pidsIn(dirs);
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  await waitFor(`${alias}: container cgroups empty and removed (PROCESS_EXIT_TIMEOUT_MS)`, PROCESS_EXIT_TIMEOUT_MS, async () => {
    for (const d of dirs) {
      try {
        fs.rmdirSync(d);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "ENOENT") return undefined;
      }
    }
    return true;
  });
  return pids.length;
}

/**
 * Puts an image of the machine's daemon (e.g. the engine-simulator image, sim/image/build.ts) into
 * the host's daemon with `docker save | docker load`; the image ID stays the same. A no-op when the
 * host has it already. Returns the image ID as the host's daemon reports it.
 */
export async function loadDockerImage(alias: string, image: string): Promise<string> {
  const inspect = () => runInHost(alias, ["docker", "image", "inspect", "--format", "{{.Id}}", image], { allowFail: true });
  const have = await inspect();
  if (have.code === 0) return have.stdout.trim();
  const save = spawn("docker", ["save", image], { stdio: ["ignore", "pipe", "pipe"] });
  const load = spawn("nsenter", [...enterHost(alias), "docker", "load", "--quiet"], { env: hostEnv, stdio: ["pipe", "pipe", "pipe"] });
  save.stdout.pipe(load.stdin);
  let errors = "";
  save.stderr.on("data", (d: Buffer) => (errors += d.toString()));
  load.stderr.on("data", (d: Buffer) => (errors += d.toString()));
  const ended = (c: ReturnType<typeof spawn>) => new Promise<number | null>((resolve) => c.once("close", (code) => resolve(code)));
  const timer = setTimeout(() => {
    save.kill("SIGKILL");
    load.kill("SIGKILL");
  }, DOCKER_IMAGE_LOAD_TIMEOUT_MS);
  const [saved, loaded] = await Promise.all([ended(save), ended(load)]).finally(() => clearTimeout(timer));
  if (saved !== 0 || loaded !== 0) {
    throw new SimError(
      "SIM_COMMAND_FAILED",
      `${alias}: docker save ${image} | docker load (in the host) failed (save ${saved}, load ${loaded}; DOCKER_IMAGE_LOAD_TIMEOUT_MS=${DOCKER_IMAGE_LOAD_TIMEOUT_MS}): ${errors.trim()}`,
    );
  }
  const after = await inspect();
  if (after.code !== 0) throw new SimError("SIM_COMMAND_FAILED", `${alias}: ${image} is missing from the host's daemon after docker load`);
  return after.stdout.trim();
}

/** nsenter's options into a host's namespaces, through its anchor (as runInHost enters). */
function enterHost(alias: string): string[] {
  const pid = liveAnchorPid(alias, hostPaths(alias));
  if (!pid) throw new SimError("SIM_HOST_DOWN", `host ${alias} is not up (no live namespace anchor); run \`npm run sim -- up\``);
  return enter(pid).slice(1);
}

/**
 * The anchor: one idle process per host (`sleep infinity`) that owns the host's mount and UTS
 * namespaces inside its network namespace. sshd and `runInHost` enter the anchor's namespaces with
 * nsenter, so sshd can be restarted (e.g. with a new host key) without losing the host's mounts.
 *
 * The anchor is started as `ip netns exec nw-<alias> unshare --mount --uts --propagation private
 * sh -c ANCHOR_SCRIPT`; every value reaches the script through environment variables, never by
 * splicing text into it.
 */
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import { ANCHOR_READY_TIMEOUT_MS, HOST_MODELS_ROOT, HOST_SHIM_DIR, PROJECT_ROOT } from "./constants";
import { ETC_OVERRIDES } from "./etc";
import { pidAlive, SimError } from "./exec";
import { deviceNodesOf } from "./inventory";
import { netnsName } from "./network";
import type { HostPaths } from "./paths";
import type { HostSpec } from "../topology";

/**
 * Runs inside the new mount+UTS namespace (propagation private, so nothing leaks to the machine):
 * sets the hostname; bind-mounts the host's fake PCI tree, shims, checkpoint, /etc files and its own
 * /root, /home, /opt and /srv; on GPU and RDMA hosts rebuilds /dev in a tmpfs with the vendor's device
 * nodes added; on RDMA hosts adds /sys/class/infiniband and /sys/class/infiniband_verbs, on AMD hosts
 * /sys/class/drm (a tmpfs over /sys/class with each of the kernel's own class folders bound back, since
 * sysfs takes no new folder); gives the host private /tmp, /var/tmp and /dev/shm (docker hosts also /run, and the machine's
 * cgroup hierarchies). Everything else (/usr, /var, the rest of /etc) is the machine's, shared by all
 * hosts. Prints "ready" on stdout when done, then becomes `sleep infinity`.
 */
export const ANCHOR_SCRIPT = `
set -eu
hostname "$SIM_ALIAS"
mount --bind "$SIM_PCI_DIR" /sys/bus/pci/devices
if [ -n "$SIM_SYS_CLASS_DIR" ]; then
  mkdir -p "$SIM_SYS_CLASS_STAGE"
  mount --bind /sys/class "$SIM_SYS_CLASS_STAGE"
  mount -t tmpfs -o mode=755,nosuid,nodev tmpfs /sys/class
  for c in "$SIM_SYS_CLASS_STAGE"/* "$SIM_SYS_CLASS_DIR"/*; do
    [ -e "$c" ] || continue
    mkdir -p "/sys/class/\${c##*/}"
    mount --bind "$c" "/sys/class/\${c##*/}"
  done
  umount "$SIM_SYS_CLASS_STAGE"
fi
mount --bind "$SIM_BIN_DIR" "$SIM_SHIM_TARGET"
mount --bind "$SIM_MODELS_DIR" "$SIM_MODELS_TARGET"
mount --bind "$SIM_HOME_DIR" /home
mount --bind "$SIM_ROOT_HOME" /root
mount --bind "$SIM_OPT_DIR" /opt
mount --bind "$SIM_SRV_DIR" /srv
for f in $SIM_ETC_FILES; do
  if [ -e "/etc/$f" ]; then mount --bind "$SIM_ETC_DIR/$f" "/etc/$f"; fi
done
if [ -n "$SIM_DEV_NODES" ]; then
  # Copy /dev into a tmpfs (device nodes keep their numbers), carry its submounts (pts, shm, ...)
  # over, move the tmpfs onto /dev, then add the GPU nodes with /dev/null's numbers.
  mount -t tmpfs -o mode=755,nosuid tmpfs "$SIM_DEV_STAGE"
  cp -a -x /dev/. "$SIM_DEV_STAGE/"
  for sub in $(awk '$5 ~ "^/dev/[^/]+$" { print substr($5, 6) }' /proc/self/mountinfo | sort -u); do
    mkdir -p "$SIM_DEV_STAGE/$sub"
    mount --rbind "/dev/$sub" "$SIM_DEV_STAGE/$sub"
  done
  mount --move "$SIM_DEV_STAGE" /dev
  for node in $SIM_DEV_NODES; do
    mkdir -p "$(dirname "/dev/$node")"
    mknod -m 0666 "/dev/$node" c 1 3
  done
fi
if [ -n "$SIM_PRIVATE_RUN" ]; then
  # A docker host's own /run, as after a reboot: its Docker Engine keeps socket, pid and state there
  # (where the docker CLI looks by default), and the machine's daemon socket is out of sight.
  mount -t tmpfs -o mode=755,nosuid,nodev tmpfs /run
  mkdir -p /run/sshd /run/lock
  chmod 1777 /run/lock
  # \`ip netns exec\` gave this namespace a sysfs of its own, without the machine's cgroup mounts, and a
  # Docker Engine needs them: mount the same hierarchies again, as the machine has them (pid 1's view).
  sed -n 's#^[0-9]* [0-9]* [0-9:]* [^ ]* \\(/sys/fs/cgroup[^ ]*\\) .* - \\(tmpfs\\|cgroup\\|cgroup2\\) [^ ]* \\([^ ]*\\)$#\\1 \\2 \\3#p' /proc/1/mountinfo |
    while read -r mnt type opts; do
      mkdir -p "$mnt"
      mount -t "$type" -o "$opts" "$type" "$mnt"
    done
  init_view=/proc/1/root # the machine's filesystem as pid 1 sees it
  for l in "$init_view"/sys/fs/cgroup/*; do
    if [ -L "$l" ]; then ln -s "$(readlink "$l")" "/sys/fs/cgroup/\${l##*/}"; fi
  done
fi
# Scratch space no other host sees, empty on every start as after a reboot. The project itself may
# live under one of these (a CI checkout in /tmp): the shell keeps it open as its working directory,
# and after the masking it is bound back at its own path, so shims, sshd config and keys stay visible.
cd "$SIM_PROJECT_ROOT"
for d in /tmp /var/tmp /dev/shm; do
  mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$d"
done
case "$SIM_PROJECT_ROOT" in
  /tmp/*|/var/tmp/*|/dev/shm/*) mkdir -p "$SIM_PROJECT_ROOT" && mount --no-canonicalize --bind /proc/self/cwd "$SIM_PROJECT_ROOT" ;;
esac
cd /
echo $$ > "$SIM_ANCHOR_PID_FILE"
echo ready
exec sleep infinity </dev/null >/dev/null 2>&1
`;

/** Starts the anchor and waits (bounded) until its mounts are in place; returns its pid. */
export async function startAnchor(host: HostSpec, p: HostPaths): Promise<number> {
  fs.rmSync(p.anchorPid, { force: true });
  fs.mkdirSync(p.devStage, { recursive: true });
  const log = fs.openSync(p.anchorLog, "w");
  const env: NodeJS.ProcessEnv = {
    PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    SIM_ALIAS: host.alias,
    SIM_PCI_DIR: p.pciDir,
    SIM_SYS_CLASS_DIR: host.rdma?.length || host.layout.model?.vendor === "amd" ? p.sysClassDir : "",
    SIM_SYS_CLASS_STAGE: p.sysClassStage,
    SIM_BIN_DIR: p.binDir,
    SIM_SHIM_TARGET: HOST_SHIM_DIR,
    SIM_MODELS_DIR: p.modelsDir,
    SIM_MODELS_TARGET: HOST_MODELS_ROOT,
    SIM_HOME_DIR: p.homeDir,
    SIM_ROOT_HOME: p.rootHome,
    SIM_OPT_DIR: p.optDir,
    SIM_SRV_DIR: p.srvDir,
    SIM_ETC_DIR: p.etcDir,
    SIM_ETC_FILES: ETC_OVERRIDES.join(" "),
    SIM_DEV_STAGE: p.devStage,
    SIM_DEV_NODES: deviceNodesOf(host).join(" "),
    SIM_PRIVATE_RUN: host.dockerEngine ? "1" : "",
    SIM_ANCHOR_PID_FILE: p.anchorPid,
    SIM_PROJECT_ROOT: PROJECT_ROOT,
  };
  const argv = ["netns", "exec", netnsName(host.alias), "unshare", "--mount", "--uts", "--propagation", "private", "sh", "-c", ANCHOR_SCRIPT];
  const child = spawn("ip", argv, { env, detached: true, stdio: ["ignore", "pipe", log] });
  fs.closeSync(log);
  try {
    await new Promise<void>((resolve, reject) => {
      let out = "";
      const timer = setTimeout(() => {
        child.kill("SIGKILL");
        reject(new SimError("SIM_TIMEOUT", `${host.alias}: namespace anchor not ready after ANCHOR_READY_TIMEOUT_MS=${ANCHOR_READY_TIMEOUT_MS} ms (log ${p.anchorLog})`));
      }, ANCHOR_READY_TIMEOUT_MS);
      child.stdout!.on("data", (d: Buffer) => {
        out += d.toString();
        if (out.includes("ready\n")) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once("exit", (code, signal) => {
        clearTimeout(timer);
        const log = fs.existsSync(p.anchorLog) ? fs.readFileSync(p.anchorLog, "utf8").trim() : "";
        reject(new SimError("SIM_HOST_SETUP", `${host.alias}: namespace setup failed (exit ${code ?? signal}): ${log}`));
      });
    });
  } finally {
    child.stdout!.destroy();
    child.removeAllListeners("exit");
    child.unref();
  }
  return Number(fs.readFileSync(p.anchorPid, "utf8").trim());
}

/** The anchor's pid when it is alive and still in the host's network namespace. */
export function liveAnchorPid(alias: string, p: HostPaths): number | undefined {
  if (!fs.existsSync(p.anchorPid)) return undefined;
  const pid = Number(fs.readFileSync(p.anchorPid, "utf8").trim());
  if (!Number.isInteger(pid) || pid <= 0 || !pidAlive(pid)) return undefined;
  try {
    const nsInode = fs.statSync(`/run/netns/${netnsName(alias)}`).ino;
    const pidInode = fs.statSync(`/proc/${pid}/ns/net`).ino;
    return nsInode === pidInode ? pid : undefined;
  } catch {
    return undefined;
  }
}

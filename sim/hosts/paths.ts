/**
 * Where the harness keeps its state under <root>/.sim/ (one function per file or folder, so the
 * layout is written down once).
 *
 *   .sim/lock                      held while `up`/`down` change the fleet
 *   .sim/fleet.json                the hosts that `up` brought up, with their specs
 *   .sim/ssh/id_ed25519[.pub]      the harness's login key (generated once)
 *   .sim/ssh/known_hosts, config   OpenSSH files for `ssh -F .sim/ssh/config sim1`
 *   .sim/authorized_keys           world-readable copy of the public key (sshd reads it as the user)
 *   .sim/narwhal-password          the password of the `narwhal` user (mode 0600)
 *   .sim/hosts/<alias>/            one simulated host: host key, sshd config/pid/log, fake inventory,
 *                                  shims, checkpoint, engine sim config, /etc overrides; on docker
 *                                  hosts also the Docker Engine's data root, config, pid and log
 */
import * as path from "node:path";
import { SIM_DIR } from "./constants";

export const lockFile = (): string => path.join(SIM_DIR, "lock");
export const fleetStateFile = (): string => path.join(SIM_DIR, "fleet.json");
export const sshDir = (): string => path.join(SIM_DIR, "ssh");
export const privateKeyFile = (): string => path.join(sshDir(), "id_ed25519");
export const publicKeyFile = (): string => `${privateKeyFile()}.pub`;
export const knownHostsFile = (): string => path.join(sshDir(), "known_hosts");
export const sshConfigFile = (): string => path.join(sshDir(), "config");
export const authorizedKeysFile = (): string => path.join(SIM_DIR, "authorized_keys");
export const passwordFile = (): string => path.join(SIM_DIR, "narwhal-password");
/** Marker: the harness created the root namespace's /models mount point and removes it on down. */
export const modelsMountPointMarker = (): string => path.join(SIM_DIR, "created-models-mountpoint");

export function hostPaths(alias: string) {
  const dir = path.join(SIM_DIR, "hosts", alias);
  return {
    dir,
    hostKey: path.join(dir, "ssh_host_ed25519_key"),
    hostKeyPub: path.join(dir, "ssh_host_ed25519_key.pub"),
    sshdConfig: path.join(dir, "sshd_config"),
    sshdPid: path.join(dir, "sshd.pid"),
    sshdLog: path.join(dir, "sshd.log"),
    /** The process that holds the host's mount and UTS namespaces (see anchor.ts). */
    anchorPid: path.join(dir, "anchor.pid"),
    anchorLog: path.join(dir, "anchor.log"),
    /** Bind-mounted over /sys/bus/pci/devices. */
    pciDir: path.join(dir, "sys", "bus", "pci", "devices"),
    /** Entries added to /sys/class (RDMA hosts: infiniband/, infiniband_verbs/; AMD hosts: drm/), and where the real /sys/class is held while they are. */
    sysClassDir: path.join(dir, "sys", "class"),
    sysClassStage: path.join(dir, "sys-class-stage"),
    /** Bind-mounted over /usr/local/sbin (first on the login PATH). */
    binDir: path.join(dir, "bin"),
    /** Bind-mounted over /models; the checkpoint is models/tiny-llama. */
    modelsDir: path.join(dir, "models"),
    /** Files bind-mounted over /etc/hostname, /etc/machine-id, /etc/passwd, /etc/group, /etc/shadow. */
    etcDir: path.join(dir, "etc"),
    /** Bind-mounted over /home (holds /home/narwhal). */
    homeDir: path.join(dir, "home"),
    /** Bind-mounted over /root: a fresh root home, so the machine's dotfiles (its PATH) stay out. */
    rootHome: path.join(dir, "root"),
    /** Bind-mounted over /opt and /srv: per-host places to install and keep things. */
    optDir: path.join(dir, "opt"),
    srvDir: path.join(dir, "srv"),
    /** A tmpfs is built here, then moved over /dev, for GPU hosts' fake device nodes. */
    devStage: path.join(dir, "dev-stage"),
    simConfig: path.join(dir, "sim-config.json"),
    /** The host's own Python distributions, ahead of sim/python on its path: a NIXL release the host declares (topology `nixl`). */
    pythonSite: path.join(dir, "python"),
    /** Docker hosts only: the host's own Docker Engine (data root, daemon config, pid, log). */
    dockerDataRoot: path.join(dir, "docker"),
    dockerConfig: path.join(dir, "dockerd.json"),
    dockerdPid: path.join(dir, "dockerd.pid"),
    dockerdLog: path.join(dir, "dockerd.log"),
    /** What the simulated NVIDIA container runtime hook gave each container (docker hosts with NVIDIA GPUs). */
    nvidiaHookLog: path.join(dir, "nvidia-hook.log"),
  };
}
export type HostPaths = ReturnType<typeof hostPaths>;

/**
 * One OpenSSH server per simulated host, running inside the host's namespaces (entered through the
 * anchor's pid) and listening only on the host's fabric address.
 */
import * as fs from "node:fs";
import * as net from "node:net";
import { HOST_PATH, PROCESS_EXIT_TIMEOUT_MS, SSH_PORT, SSHD_READY_TIMEOUT_MS } from "./constants";
import { pidAlive, run, SimError, waitFor } from "./exec";
import { authorizedKeysFile } from "./paths";
import type { HostPaths } from "./paths";
import type { HostSpec } from "../topology";

/**
 * UsePAM no and StrictModes no: PAM and ownership checks do not fit a root-owned .sim/ shared by all
 * hosts (see reference/sim-harness-notes.md). MaxStartups/MaxSessions are raised because tests open
 * many connections at once.
 */
export function sshdConfig(host: HostSpec, p: HostPaths): string {
  return [
    `# sshd for simulated host ${host.alias}; written by sim/hosts/sshd.ts`,
    `ListenAddress ${host.address}:${SSH_PORT}`,
    "AddressFamily inet",
    `HostKey ${p.hostKey}`,
    `PidFile ${p.sshdPid}`,
    `AuthorizedKeysFile ${authorizedKeysFile()}`,
    "PermitRootLogin prohibit-password",
    "PubkeyAuthentication yes",
    `PasswordAuthentication ${host.passwordAuth ? "yes" : "no"}`,
    "KbdInteractiveAuthentication no",
    "PermitEmptyPasswords no",
    "UsePAM no",
    "StrictModes no",
    "UseDNS no",
    "PrintMotd no",
    "PrintLastLog no",
    "X11Forwarding no",
    "AllowTcpForwarding yes",
    "MaxStartups 200",
    "MaxSessions 100",
    "LogLevel VERBOSE",
    `SetEnv PATH=${HOST_PATH}`,
    "Subsystem sftp internal-sftp",
    "",
  ].join("\n");
}

export function writeSshdConfig(host: HostSpec, p: HostPaths): void {
  fs.writeFileSync(p.sshdConfig, sshdConfig(host, p));
}

/** sshd's pid from its PidFile, when that process is alive and is sshd. */
export function liveSshdPid(p: HostPaths): number | undefined {
  if (!fs.existsSync(p.sshdPid)) return undefined;
  const pid = Number(fs.readFileSync(p.sshdPid, "utf8").trim());
  if (!Number.isInteger(pid) || pid <= 0 || !pidAlive(pid)) return undefined;
  try {
    return fs.readFileSync(`/proc/${pid}/comm`, "utf8").trim() === "sshd" ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Starts sshd in the anchor's mount, UTS and network namespaces, and waits until it answers. */
export async function startSshd(host: HostSpec, p: HostPaths, anchorPid: number): Promise<number> {
  fs.rmSync(p.sshdPid, { force: true });
  // -t first: a config error is reported here rather than as a silent daemon exit.
  const enter = ["nsenter", `--target=${anchorPid}`, "--mount", "--uts", "--net", "--"];
  await run([...enter, "/usr/sbin/sshd", "-t", "-f", p.sshdConfig], { what: `${host.alias}: check sshd config` });
  await run([...enter, "/usr/sbin/sshd", "-f", p.sshdConfig, "-E", p.sshdLog], { what: `${host.alias}: start sshd` });
  await waitForBanner(host);
  const pid = liveSshdPid(p);
  if (!pid) throw new SimError("SIM_HOST_SETUP", `${host.alias}: sshd answers but wrote no live pid to ${p.sshdPid}`);
  return pid;
}

/** Stops the listening sshd (sessions already open keep running until `down`). */
export async function stopSshd(p: HostPaths): Promise<void> {
  const pid = liveSshdPid(p);
  if (!pid) return;
  process.kill(pid, "SIGTERM");
  await waitFor(`sshd ${pid} exit (PROCESS_EXIT_TIMEOUT_MS)`, PROCESS_EXIT_TIMEOUT_MS, async () => (pidAlive(pid) ? undefined : true));
  fs.rmSync(p.sshdPid, { force: true });
}

/** Reads the server's identification line ("SSH-2.0-OpenSSH_9.2p1 ...") from the root namespace. */
export function sshBanner(address: string, port = SSH_PORT, timeoutMs = 1000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: address, port });
    let data = "";
    const done = (err?: Error) => {
      socket.destroy();
      if (err) reject(err);
      else resolve(data.split("\r\n")[0]);
    };
    socket.setTimeout(timeoutMs, () => done(new Error(`no SSH banner from ${address}:${port} within ${timeoutMs} ms`)));
    socket.on("data", (d: Buffer) => {
      data += d.toString("latin1");
      if (data.includes("\r\n")) done(data.startsWith("SSH-") ? undefined : new Error(`unexpected banner ${JSON.stringify(data)}`));
    });
    socket.on("error", done);
  });
}

export async function waitForBanner(host: HostSpec): Promise<string> {
  return waitFor(`${host.alias}: sshd on ${host.address}:${SSH_PORT} (SSHD_READY_TIMEOUT_MS)`, SSHD_READY_TIMEOUT_MS, () => sshBanner(host.address));
}

/**
 * The fleet's network: one bridge (nwbr0, 198.18.0.1/24) in the root namespace, and per host a network
 * namespace `nw-<alias>` joined to it by a veth pair whose namespace end is the fabric interface `fab0`.
 *
 * IPv6 is turned off on every interface the harness makes, so the only addresses it ever assigns are
 * 198.18.0.0/24 and loopback (no fe80:: link-local addresses either).
 */
import * as fs from "node:fs";
import { BRIDGE, FABRIC_INTERFACE, GATEWAY_ADDRESS, NETNS_PREFIX, PREFIX_LEN, VETH_GONE_TIMEOUT_MS, VETH_PREFIX } from "./constants";
import { run, waitFor } from "./exec";

export const netnsName = (alias: string): string => `${NETNS_PREFIX}${alias}`;

/** Root end of the host's veth; interface names are limited to 15 characters. */
export function vethName(alias: string): string {
  const name = `${VETH_PREFIX}${alias}`;
  if (name.length > 15) throw new Error(`host alias "${alias}" is too long: ${name} exceeds 15 characters`);
  return name;
}

export const BRIDGE_MAC = "02:4e:57:ff:00:01";

/** The iptables rule that lets bridged traffic between hosts through Docker's FORWARD DROP policy. */
export const FORWARD_RULE = ["FORWARD", "-i", BRIDGE, "-o", BRIDGE, "-j", "ACCEPT"];

async function linkExists(name: string): Promise<boolean> {
  return (await run(["ip", "link", "show", "dev", name], { allowFail: true })).code === 0;
}

function disableIpv6(iface: string): void {
  // Written through /proc rather than sysctl(8) so the interface name needs no escaping.
  fs.writeFileSync(`/proc/sys/net/ipv6/conf/${iface}/disable_ipv6`, "1");
}

/** Creates nwbr0 with 198.18.0.1/24 and the FORWARD accept rule; each step is skipped when done. */
export async function ensureBridge(): Promise<void> {
  if (!(await linkExists(BRIDGE))) {
    // A fixed MAC: otherwise the bridge takes its lowest port's, which changes as hosts come and go.
    await run(["ip", "link", "add", BRIDGE, "address", BRIDGE_MAC, "type", "bridge"], { what: `create bridge ${BRIDGE}` });
  }
  disableIpv6(BRIDGE);
  const addrs = await run(["ip", "-o", "-4", "addr", "show", "dev", BRIDGE]);
  if (!addrs.stdout.includes(` ${GATEWAY_ADDRESS}/${PREFIX_LEN} `)) {
    await run(["ip", "addr", "add", `${GATEWAY_ADDRESS}/${PREFIX_LEN}`, "dev", BRIDGE], { what: `address bridge ${BRIDGE}` });
  }
  await run(["ip", "link", "set", BRIDGE, "up"]);
  if (!(await forwardRulePresent())) {
    await run(["iptables", "-w", "5", "-I", ...FORWARD_RULE], { what: "allow forwarding on the bridge" });
  }
}

export async function forwardRulePresent(): Promise<boolean> {
  return (await run(["iptables", "-w", "5", "-C", ...FORWARD_RULE], { allowFail: true })).code === 0;
}

export async function bridgeExists(): Promise<boolean> {
  return linkExists(BRIDGE);
}

/** Removes the FORWARD rule (every copy) and the bridge. */
export async function removeBridge(): Promise<void> {
  while (await forwardRulePresent()) {
    await run(["iptables", "-w", "5", "-D", ...FORWARD_RULE], { what: "remove the bridge's FORWARD rule" });
  }
  if (await linkExists(BRIDGE)) await run(["ip", "link", "del", BRIDGE], { what: `delete bridge ${BRIDGE}` });
}

export async function listNetns(): Promise<string[]> {
  const out = await run(["ip", "netns", "list"]);
  return out.stdout
    .split("\n")
    .map((l) => l.split(" ")[0])
    .filter((n) => n.startsWith(NETNS_PREFIX));
}

export async function netnsExists(ns: string): Promise<boolean> {
  return (await listNetns()).includes(ns);
}

/** Runs a command in the namespace's network stack only (no host mounts): for plumbing. */
function inNetns(ns: string, argv: string[], what: string) {
  return run(["ip", "netns", "exec", ns, ...argv], { what });
}

/**
 * Fixed, locally administered MACs per host index (02:4e:57 is "NW"). A rebuilt host keeps its MACs,
 * so neighbour entries that the bridge and the other hosts cached for its address stay right; with
 * fresh random MACs a rebuilt host is unreachable until those stale entries time out (several seconds).
 */
export function macOf(index: number, end: "fabric" | "bridge"): string {
  const hex = (n: number) => n.toString(16).padStart(2, "0");
  return `02:4e:57:${end === "fabric" ? "00" : "01"}:${hex(index >> 8)}:${hex(index & 0xff)}`;
}

/** Makes the namespace, the veth pair (fab0 inside, nwv-<alias> on the bridge) and the fabric address. */
export async function createHostNetwork(alias: string, index: number, address: string): Promise<void> {
  const ns = netnsName(alias);
  const veth = vethName(alias);
  await run(["ip", "netns", "add", ns], { what: `create netns ${ns}` });
  // New interfaces in the namespace inherit `default`, so fab0 never gets an IPv6 link-local address;
  // lo already exists and keeps ::1, so servers that bind "::" still work.
  await inNetns(ns, ["sysctl", "-q", "-w", "net.ipv6.conf.default.disable_ipv6=1"], `disable IPv6 on new interfaces in ${ns}`);
  const link = ["ip", "link", "add", veth, "address", macOf(index, "bridge"), "type", "veth"];
  await run([...link, "peer", "name", FABRIC_INTERFACE, "address", macOf(index, "fabric"), "netns", ns], {
    what: `create veth ${veth} <-> ${ns}/${FABRIC_INTERFACE}`,
  });
  disableIpv6(veth);
  await run(["ip", "link", "set", veth, "master", BRIDGE, "up"], { what: `attach ${veth} to ${BRIDGE}` });
  await inNetns(ns, ["ip", "link", "set", "lo", "up"], `bring up lo in ${ns}`);
  await inNetns(ns, ["ip", "addr", "add", `${address}/${PREFIX_LEN}`, "dev", FABRIC_INTERFACE], `address ${FABRIC_INTERFACE} in ${ns}`);
  await inNetns(ns, ["ip", "link", "set", FABRIC_INTERFACE, "up"], `bring up ${FABRIC_INTERFACE} in ${ns}`);
}

/** Pids of every process whose network namespace is `ns` (sshd, sessions, engines, iperf3, ...). */
export async function netnsPids(ns: string): Promise<number[]> {
  const out = await run(["ip", "netns", "pids", ns], { allowFail: true });
  return out.stdout
    .split("\n")
    .map((l) => Number(l.trim()))
    .filter((n) => Number.isInteger(n) && n > 0 && n !== process.pid);
}

/**
 * Deletes the namespace; the kernel then destroys its veth pair asynchronously, so wait (bounded) for
 * the root end to go before a new host may reuse the name, and delete it by hand if it lingers.
 */
export async function deleteHostNetwork(alias: string): Promise<void> {
  const ns = netnsName(alias);
  if (await netnsExists(ns)) await run(["ip", "netns", "del", ns], { what: `delete netns ${ns}` });
  const veth = vethName(alias);
  try {
    await waitFor(`${alias}: veth ${veth} removal (VETH_GONE_TIMEOUT_MS)`, VETH_GONE_TIMEOUT_MS, async () => ((await linkExists(veth)) ? undefined : true));
  } catch {
    await run(["ip", "link", "del", veth], { what: `delete veth ${veth}`, allowFail: true });
  }
}

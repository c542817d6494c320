/**
 * A simulated host's RDMA HCA (topology option `rdma`): its sysfs tree (sim/rdma/sysfs.ts) written when
 * the host is built, and what tests change on it afterwards: the port going down and back up, and the
 * GID table following the fabric interface's addresses.
 *
 *   await setRdmaPortState("sim40", "down");       // 1: DOWN / 3: Disabled; fab0 stays up for SSH
 *   await syncRdmaGids("sim40");                   // GIDs from fab0's addresses now
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { FABRIC_INTERFACE } from "./constants";
import { SimError } from "./exec";
import { runInHost } from "./in-host";
import { macOf } from "./network";
import { hostPaths, type HostPaths } from "./paths";
import { readState, fromStored } from "./state";
import { HCA_PCI_ADDRESS, PORT_STATES, writeGidTable, writeHcaTree, type HcaSpec } from "../rdma/sysfs";
import type { HostSpec } from "../topology";

/** The host's HCA as the tree is written: a RoCE function on its fabric interface. */
export function hcaOf(spec: HostSpec, addresses: ReadonlyArray<string> = [spec.address]): HcaSpec | null {
  const name = spec.rdma?.[0];
  return name ? { alias: spec.alias, name, netdev: FABRIC_INTERFACE, mac: macOf(spec.index, "fabric"), addresses } : null;
}

/** Writes the HCA's tree into the host's folders (after its PCI tree), or removes a leftover one. */
export function writeRdmaFiles(p: HostPaths, spec: HostSpec): void {
  fs.rmSync(p.sysClassDir, { recursive: true, force: true });
  const hca = hcaOf(spec);
  if (hca) writeHcaTree(p.pciDir, p.sysClassDir, hca, 0);
}

function portDirOf(alias: string): { dir: string; spec: HostSpec } {
  const stored = readState().hosts[alias];
  if (!stored) throw new SimError("SIM_HOST_UNKNOWN", `host ${alias} is not part of the running fleet; run \`npm run sim -- up\``);
  const spec = fromStored(stored);
  const hca = hcaOf(spec);
  if (!hca) throw new SimError("SIM_NO_HCA", `host ${alias} has no RDMA HCA; give it one with the topology's rdma option, e.g. {"rdma": {"${alias}": ["mlx5_0"]}}`);
  return { dir: path.join(hostPaths(alias).pciDir, HCA_PCI_ADDRESS, "infiniband", hca.name, "ports", "1"), spec };
}

/**
 * Sets the HCA port's state as mlx5 shows it: `active` (4: ACTIVE, 5: LinkUp) or `down` (1: DOWN,
 * 3: Disabled, as a RoCE port whose cable is out). On a real mlx5 RoCE port the state follows its
 * netdev's carrier; here the netdev stays up, so the host stays reachable over SSH.
 */
export function setRdmaPortState(alias: string, state: keyof typeof PORT_STATES): void {
  const { dir } = portDirOf(alias);
  for (const [file, text] of [["state", PORT_STATES[state].state], ["phys_state", PORT_STATES[state].physState]] as const) {
    fs.writeFileSync(path.join(dir, file), `${text}\n`);
  }
}

/** Rewrites the GID table from the fabric interface's IPv4 addresses now (in the order `ip` lists them), as the kernel does when they change. */
export async function syncRdmaGids(alias: string): Promise<string[]> {
  const { dir, spec } = portDirOf(alias);
  const out = (await runInHost(alias, ["ip", "-o", "-4", "addr", "show", "dev", FABRIC_INTERFACE, "scope", "global"])).stdout;
  const addresses = [...out.matchAll(/\binet\s+([0-9.]+)\//g)].map((m) => m[1]);
  writeGidTable(dir, hcaOf(spec, addresses)!);
  return addresses;
}

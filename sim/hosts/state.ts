/**
 * .sim/fleet.json: which hosts `up` brought up and with what spec, so `status`, `down` and a later
 * `up` know what the running fleet is without guessing from namespaces alone.
 */
import * as fs from "node:fs";
import { fleetStateFile } from "./paths";
import type { HostSpec, LatencyCoefficients } from "../topology";
import { parseLayout } from "../topology";

/** A HostSpec as stored (layout by name). */
export interface StoredHost {
  alias: string;
  index: number;
  address: string;
  layout: string;
  passwordAuth: boolean;
  latency: LatencyCoefficients;
  startupDelayS: number;
  startedAt: string;
  /** Docker hosts only (absent on the numbered hosts, as in fleet.json files written before them). */
  dockerEngine?: boolean;
  /** Hosts with an RDMA HCA only: its name. */
  rdma?: string[];
  /** Hosts that declare their own NIXL release only. */
  nixl?: string;
}

export interface FleetState {
  version: 1;
  hosts: Record<string, StoredHost>;
}

export function readState(): FleetState {
  const file = fleetStateFile();
  if (!fs.existsSync(file)) return { version: 1, hosts: {} };
  return JSON.parse(fs.readFileSync(file, "utf8")) as FleetState;
}

export function writeState(state: FleetState): void {
  const file = fleetStateFile();
  fs.writeFileSync(`${file}.tmp`, `${JSON.stringify(state, null, 2)}\n`);
  fs.renameSync(`${file}.tmp`, file);
}

export function toStored(spec: HostSpec, startedAt: string): StoredHost {
  const { alias, index, address, passwordAuth, latency, startupDelayS } = spec;
  return {
    alias, index, address, layout: spec.layout.name, passwordAuth, latency, startupDelayS, startedAt,
    ...(spec.dockerEngine ? { dockerEngine: true } : {}),
    ...(spec.rdma?.length ? { rdma: [...spec.rdma] } : {}),
    ...(spec.nixl ? { nixl: spec.nixl } : {}),
  };
}

export function fromStored(s: StoredHost): HostSpec {
  const { alias, index, address, passwordAuth, latency, startupDelayS } = s;
  return {
    alias, index, address, layout: parseLayout(s.layout), passwordAuth, latency, startupDelayS,
    ...(s.dockerEngine ? { dockerEngine: true } : {}),
    ...(s.rdma?.length ? { rdma: s.rdma } : {}),
    ...(s.nixl ? { nixl: s.nixl } : {}),
  };
}

/** True when a running host can be kept: what its namespaces and sshd were built from is unchanged. */
export function sameStructure(stored: StoredHost, spec: HostSpec): boolean {
  return (
    stored.address === spec.address &&
    stored.layout === spec.layout.name &&
    stored.passwordAuth === spec.passwordAuth &&
    Boolean(stored.dockerEngine) === Boolean(spec.dockerEngine) &&
    (stored.rdma ?? []).join(",") === (spec.rdma ?? []).join(",")
  );
}

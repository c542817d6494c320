import type { FleetSpec } from "../config/types";

/** This stack's folder on a host: engines, sidecars, the router and its install live under it. */
export function stackDirOn(spec: FleetSpec, hostAlias: string, stack: string): string {
  const host = spec.hosts.find((h) => h.alias === hostAlias);
  if (!host) throw new Error(`no host "${hostAlias}" in hosts`);
  return `${host.stateDir}/${stack}`;
}

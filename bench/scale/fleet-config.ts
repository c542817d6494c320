import type { SimHost } from "../../sim/hosts/host";
import type { EngineEntry } from "../../test/e2e/support/stack";

/**
 * Hosts of the benchmark's own, clear of every fleet the tests bring up (sim1-sim4 e2e, sim6/sim7
 * provider tests, simdock), so the benchmark can run beside them and take its hosts down after.
 */
export const SCALE_HOSTS = ["sim21", "sim22", "sim23", "sim24"] as const;
/** The topology must reach the highest index for `simUp({aliases})` to find these hosts. */
export const SCALE_TOPOLOGY_SIZE = 24;
export const GPUS_PER_HOST = 4;
export const SCALE_LAYOUT = `h100:${GPUS_PER_HOST}`;
/** Router and Prometheus ports no other stack uses (e2e: 8321/9391, dev: defaults). */
export const ROUTER_PORT = 8521;
export const PROMETHEUS_PORT = 9591;

/**
 * One engine per GPU, host after host. Ports follow the config's per-index defaults (8100+i, 8200+i,
 * 5600+i), written out so they are distinct across the whole fleet, not only per host.
 */
export function scaleEngines(hosts: readonly SimHost[]): EngineEntry[] {
  return hosts.flatMap((h, hi) =>
    Array.from({ length: GPUS_PER_HOST }, (_, g) => {
      const i = hi * GPUS_PER_HOST + g;
      return { id: `e${i + 1}`, host: h.alias, gpuIds: [g], port: 8100 + i, attestationPort: 8200 + i, nixlPort: 5600 + i };
    }),
  );
}

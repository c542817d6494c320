/**
 * Resource names of the shared fleet's evidence, so each invalidation test states its expected set in the
 * program's own terms: what is bound to one engine's process, and what the fleet measured across engines.
 */

/** The shared fleet's engines (test/e2e/support/stack.ts). */
export const SHARED_ENGINES = ["e1", "e2", "e3", "e4"];

/** Evidence bound to one engine's live process: generation, cache capture, sidecar, attestation, profile. */
export const processEvidence = (id: string): string[] => [`fleet-${id}-generation`, `fleet-${id}-cache`, `fleet-attestation-${id}-sidecar`, `fleet-attestation-${id}`, `fleet-profiles-${id}`];

/** The router's process replaced: its process, its proof and the record of both (Gate G). */
export const ROUTER_PROCESS_RESTART = ["fleet-router-host-router-process", "fleet-router-host-router-proof", "fleet-router-host-router-record"];

/** What the evidence freshness exporter expects of the live fleet: rewritten whenever the router serves new evidence. */
export const FRESHNESS_EXPECTED = "fleet-router-host-monitoring-freshness-expected";

/** The shared fleet's hosts (test/e2e/support/stack.ts). */
export const SHARED_HOSTS = ["sim1", "sim2", "sim4"];

/** The single-controller check on every fleet host, made before the serving router stops for a swap. */
export const controllerChecks = (hosts: readonly string[]): string[] => hosts.map((h) => `fleet-router-host-router-controller-check-${h}`);
export const CONTROLLER_CHECKS = controllerChecks(SHARED_HOSTS);

/**
 * A router on new inputs: first the checks that its port is free and that no other router serves its
 * engines (made before the serving router stops), then its process (swapped in place: an update), its
 * proof and record, and the freshness expectation.
 */
export const routerRestart = (hosts: readonly string[]): string[] => ["fleet-router-host-router-port-check", ...controllerChecks(hosts), ...ROUTER_PROCESS_RESTART, FRESHNESS_EXPECTED];
export const ROUTER_RESTART = routerRestart(SHARED_HOSTS);

/**
 * What follows any engine's new profile or attestation: the store the router loads, the preflight over
 * every engine and pair, and the router restarted on that store with its proof.
 */
export const fleetAfterEngine = (hosts: readonly string[]): string[] => ["fleet-profiles-store", "fleet-preflight", ...routerRestart(hosts)];
export const FLEET_AFTER_ENGINE = fleetAfterEngine(SHARED_HOSTS);

/** The same, without the `fleet-` prefix, as an alternation for name patterns (`^fleet-(...)$`). */
export const FLEET_AFTER_ENGINE_PATTERN = FLEET_AFTER_ENGINE.map((n) => n.replace(/^fleet-/, "")).join("|");

/**
 * Prometheus's file targets hold every engine's URL, which is unknown in a preview while the engine's host
 * is being discovered again: they are rewritten (with the same URLs) after a host's discovery is replaced.
 */
export const SCRAPE_TARGETS = "fleet-router-host-monitoring-targets";


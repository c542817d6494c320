import { sidecarEndpoint } from "../attestation/sidecar";
import type { FleetSpec } from "../config";
import { launchRecord, type LaunchPlan } from "../launch/plan";
import { envFile } from "../shell";
import type { HostLogin } from "../ssh/login";

/**
 * The configuration the runbook's Gate A writes (`config/` in a management checkout), rendered from
 * what the program measured. Every file is private (destinations, addresses): it lands in the
 * evidence store with mode 0600 and never in stack outputs.
 */
export interface GeneratedHost {
  readonly alias: string;
  readonly login: HostLogin;
  readonly hostKey: string;
  readonly fabricAddress: string;
  readonly discovery: { readonly relativePath: string; readonly digest: string };
  readonly policyDigest: string;
}

export function generatedConfig(
  spec: FleetSpec,
  routerHost: string,
  hosts: ReadonlyArray<GeneratedHost>,
  plans: ReadonlyArray<LaunchPlan>,
  fleetJson: Record<string, unknown>,
): Record<string, string> {
  const byAlias = new Map(hosts.map((h) => [h.alias, h]));
  const engineHost = (id: string) => byAlias.get(spec.engines.find((e) => e.id === id)!.host)!;
  const destination = (h: GeneratedHost) => `${h.login.user}@${h.login.host}${h.login.port !== 22 ? `:${h.login.port}` : ""}`;

  const hostsMap = {
    router: { host: routerHost, destination: destination(byAlias.get(routerHost)!) },
    hosts: Object.fromEntries(
      hosts.map((h) => [
        h.alias,
        {
          destination: destination(h),
          jump: h.login.jump ? `${h.login.jump.user}@${h.login.jump.host}:${h.login.jump.port}` : null,
          roles: [...(h.alias === routerHost ? ["router"] : []), ...spec.engines.filter((e) => e.host === h.alias).map((e) => `engine-${e.index + 1}`)],
        },
      ]),
    ),
  };
  const knownHosts = hosts.map((h) => `${h.login.port === 22 ? h.login.host : `[${h.login.host}]:${h.login.port}`} ${h.hostKey}\n`).join("");
  const launches = { engines: Object.fromEntries(plans.map((p) => [p.engineId, launchRecord(p)])) };
  const sources = {
    engines: Object.fromEntries(
      plans.map((p) => {
        const h = engineHost(p.engineId);
        return [p.engineId, { discovery: h.discovery, policyDigest: h.policyDigest, planSha256: p.planSha256 }];
      }),
    ),
  };
  const env: Record<string, string> = {
    NARWHAL_ENGINE_MODEL_NAME: spec.model.servedName,
    NARWHAL_MODEL_DIR: spec.model.checkpointDir,
    NARWHAL_ROUTER_SSH: destination(byAlias.get(routerHost)!),
  };
  spec.engines.forEach((e, i) => {
    const h = byAlias.get(e.host)!;
    const plan = plans.find((p) => p.engineId === e.id)!;
    const n = i + 1;
    env[`NARWHAL_NODE_${n}_SSH`] = destination(h);
    env[`NARWHAL_NODE_${n}_IP`] = h.fabricAddress;
    env[`NARWHAL_NODE_${n}_URL`] = plan.url;
    env[`NARWHAL_NODE_${n}_ATTESTATION_URL`] = sidecarEndpoint(plan.url, e.attestationPort).url;
    // As the runbook's own env: an engine's GPUs are named where the config names them, unset where it takes every GPU of its host.
    if (plan.placement.gpuIdsNamed) env[`NARWHAL_NODE_${n}_GPU_IDS`] = plan.placement.gpuIds.join(",");
  });
  return {
    "hosts.local.json": JSON.stringify(hostsMap, null, 2) + "\n",
    "ssh.known_hosts": knownHosts,
    "engine-launch.local.json": JSON.stringify(launches, null, 2) + "\n",
    "engine-launch.sources.json": JSON.stringify(sources, null, 2) + "\n",
    "fleet.json": JSON.stringify(fleetJson, null, 2) + "\n",
    "deployment.env": envFile(env),
  };
}

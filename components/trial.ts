import * as pulumi from "@pulumi/pulumi";
import type * as command from "@pulumi/command";
import type { EngineSpec, FleetSpec } from "../lib/config/types";
import { LoadTrial } from "../dynamic-providers/load-trial/resource";
import type { ProfileMesh } from "./profiles";
import type { RouterHost } from "./router";
import type { Engine } from "./engine";
import { loginInputs } from "./login-inputs";
import { capacityPoint, type CapacityPoint } from "../lib/trial/capacity";
import { routerBackendPort } from "../lib/router/front";

export interface TrialArgs {
  spec: FleetSpec;
  stack: string;
  engines: ReadonlyArray<{ spec: EngineSpec; engine: Engine }>;
  profiles: ProfileMesh;
  routerHost: string;
  router: RouterHost;
  /** Every host's connection, by alias: the trial keeps each host's socket summary. */
  connectionOf: (alias: string) => pulumi.Input<command.types.input.remote.ConnectionArgs>;
}

/**
 * Gate G's capacity trial: one LoadTrial per configured point, run after the router's proof and with the
 * stack's Prometheus scraping, one after another (each point starts from a drained fleet). A point is
 * bound to the serving router, every engine's generation and the profile store, so an engine restart or
 * a new profile runs every point again, and a new rate or count runs only that point.
 */
export function capacityTrial(name: string, args: TrialArgs, parent: pulumi.Resource): LoadTrial[] {
  const { spec } = args;
  const via = loginInputs(args.connectionOf(args.routerHost), args.routerHost);
  const aliases = spec.hosts.map((h) => h.alias);
  const logins = aliases.map((alias) => ({ alias, ...loginInputs(args.connectionOf(alias), alias) }));
  const secretMap = (pick: (l: (typeof logins)[number]) => pulumi.Output<string | undefined>) =>
    pulumi.secret(pulumi.all(logins.map((l) => pick(l).apply((v) => [l.alias, v] as const))).apply((pairs) => Object.fromEntries(pairs.filter(([, v]) => v !== undefined)) as Record<string, string>));
  const engines = pulumi.all(
    args.engines.map(({ spec: e, engine }) =>
      pulumi.all([engine.url, engine.generation.generationDigest, args.profiles.profiles[e.id].row]).apply(([url, generationDigest, row]) => ({ engineId: e.id, role: e.role, hostAlias: e.host, url, generationDigest, row })),
    ),
  );
  const router = args.router.router;
  const after: pulumi.Resource[] = [router.proofCommand, ...(args.router.monitoring ? [args.router.monitoring] : [])];
  const points: LoadTrial[] = [];
  for (const point of spec.trial.points) {
    const previous = points[points.length - 1];
    points.push(
      new LoadTrial(
        `${name}-${point.id}`,
        {
          stack: args.stack,
          point: { ...point, mix: point.mix.map((c) => ({ ...c })) },
          model: spec.model.servedName,
          slo: { ttftS: spec.slo.ttftS, tpotS: spec.slo.tpotS },
          routerUrl: router.url,
          routerPid: router.started.pid,
          routerBackendPort: routerBackendPort(spec.router),
          routerStartedAt: router.started.startedAt,
          fleetDocumentDigest: router.documentDigest,
          ...(spec.observability.enabled ? { prometheus: `127.0.0.1:${spec.observability.prometheusPort}` } : {}),
          scrapeIntervalS: spec.observability.scrapeIntervalS,
          engines,
          profileStoreDigest: args.profiles.store.storeDigest,
          routerHost: args.routerHost,
          via: via.login,
          viaPrivateKey: via.privateKey,
          viaPassword: via.password,
          hosts: pulumi.all(logins.map((l) => l.login.apply((login) => ({ alias: l.alias, login })))),
          hostPrivateKeys: secretMap((l) => l.privateKey),
          hostPasswords: secretMap((l) => l.password),
          requestTimeoutS: spec.trial.requestTimeoutS,
          drainTimeoutS: spec.trial.drainTimeoutS,
          minGoodFraction: spec.trial.minGoodFraction,
          predictionBound: spec.trial.predictionBound,
          routerOverheadS: spec.calibration.routerOverheadS,
        },
        // One point at a time: each starts from a drained fleet, never beside another's load.
        { parent, dependsOn: previous ? [...after, previous] : after },
      ),
    );
  }
  // The up's log says each point's verdict where the operator reads it; the outputs and report keep it.
  for (const p of points) {
    pulumi.all([p.point, p.verdict, p.reasons]).apply(([point, verdict, reasons]) => {
      if (verdict && verdict !== "pass") void pulumi.log.warn(`trial point ${point.id}: ${verdict}: ${reasons.join("; ")}`, p);
    });
  }
  return points;
}

/** The `capacity` stack output from the points' resources. */
export function capacityOutput(points: readonly LoadTrial[]): pulumi.Output<{ points: Record<string, CapacityPoint> }> {
  return pulumi
    .all(points.map((t) => pulumi.all([t.point, t.verdict, t.reasons, t.summary, t.prediction, t.departure, t.evidence]).apply(([point, verdict, reasons, summary, prediction, departure, evidence]) => [point.id, capacityPoint({ point, verdict, reasons, summary, prediction, departure, evidence })] as const)))
    .apply((entries) => ({ points: Object.fromEntries(entries) }));
}

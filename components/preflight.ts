import * as pulumi from "@pulumi/pulumi";
import type * as command from "@pulumi/command";
import type { FleetSpec } from "../lib/config/types";
import type { PairMode } from "../lib/preflight/pairs";
import type { ScheduleMode } from "../lib/preflight/schedule";
import type { Attestation } from "../dynamic-providers/attestation/resource";
import { Preflight } from "../dynamic-providers/preflight/resource";
import type { Engine } from "./engine";
import type { FabricEdge } from "../dynamic-providers/fabric-edge/resource";
import type { ProfileMesh } from "./profiles";
import { loginInputs } from "./login-inputs";

export interface PreflightArgs {
  spec: FleetSpec;
  stack: string;
  engines: ReadonlyArray<{ spec: { id: string }; engine: Engine }>;
  attestations: Readonly<Record<string, Attestation>>;
  profiles: ProfileMesh;
  /** The measured fabric edges: a re-measured edge (a route, host or transport change) replaces the preflight. */
  fabricEdges: ReadonlyArray<FabricEdge>;
  /** The fleet document the router will load. */
  fleetDocument: pulumi.Input<Record<string, unknown>>;
  engineApiKey: pulumi.Input<string>;
  routerHost: string;
  routerConnection: pulumi.Input<command.types.input.remote.ConnectionArgs>;
  /** The runbook's default: the full eligible mesh, each pair once, independent pairs concurrently. */
  pairs?: PairMode;
  repeats?: number;
  schedule?: ScheduleMode;
  /** Fail the up on a degraded run too (`preflight.strict`). */
  strict?: boolean;
}

/**
 * Gate F's preflight after the profile store: narwhal-check's gates from the router host against the
 * document, generations, attestations and profiles the router will use. An SLO or deadline edit
 * replaces only this; an engine restart (a new generation) replaces it too.
 */
export function preflight(name: string, args: PreflightArgs, opts: pulumi.CustomResourceOptions): Preflight {
  const via = loginInputs(args.routerConnection, args.routerHost);
  const engines = args.engines.map(({ spec: e, engine }) => {
    const a = args.attestations[e.id];
    const p = args.profiles.profiles[e.id];
    return pulumi.all([engine.generation.generationDigest, a.attestationDigest, a.launchDigest, p.profileDigest]).apply(([generationDigest, attestationDigest, launchDigest, profileDigest]) => ({
      engineId: e.id,
      generationDigest,
      attestationDigest,
      ...(launchDigest ? { launchDigest } : {}),
      profileDigest,
    }));
  });
  return new Preflight(
    name,
    {
      stack: args.stack,
      fleetDocument: args.fleetDocument,
      engines: pulumi.all(engines),
      profiles: pulumi.all(Object.values(args.profiles.profiles).map((p) => p.row)),
      profileStoreDigest: args.profiles.store.storeDigest,
      fabricEdges: pulumi.all(args.fabricEdges.map((e) => e.id)),
      pairs: args.pairs ?? "mesh",
      repeats: args.repeats ?? 1,
      schedule: args.schedule ?? "concurrent",
      strict: args.strict ?? false,
      apiKey: args.engineApiKey,
      via: via.login,
      viaPrivateKey: via.privateKey,
      viaPassword: via.password,
      // A failing gate line keeps the log tail of each engine it names, read over its host's login.
      engineLogs: pulumi.all(args.engines.map(({ engine }) => engine.logAccess)),
      engineHostSecrets: pulumi.secret(
        pulumi.all(args.engines.map(({ engine }) => pulumi.all([engine.logAccess.hostAlias, engine.hostSecrets]))).apply((hosts) => Object.fromEntries(hosts)),
      ),
    },
    pulumi.mergeOptions(opts, { dependsOn: [args.profiles.store] }),
  );
}

import * as pulumi from "@pulumi/pulumi";
import type * as command from "@pulumi/command";
import { OpaqueComponent } from "./opaque-component";
import type { EngineSpec, FleetSpec } from "../lib/config/types";
import { maxNumSeqsOf } from "../lib/profiling/limits";
import { NARWHAL_FIT_LIMITS } from "../lib/profiling/fit-limits";
import { previousInLane } from "../lib/profiling/lanes";
import { sweepRecord, type Sweep } from "../lib/profiling/sweep";
import type { AdoptSource } from "../lib/profiling/adopt";
import { Profile } from "../dynamic-providers/profile/resource";
import type { ProfileAdoption, ProfileFitErrors, ProfileFitTry } from "../lib/profiling/engine-profile";
import { loginInputs } from "./login-inputs";
import { ProfileStore } from "../dynamic-providers/profile-store/resource";
import type { Attestation } from "../dynamic-providers/attestation/resource";
import type { Engine } from "./engine";
import { stackDirOn } from "../lib/fleet/state-dir";

/** The fleet document's `profiles.path`: the router runs in its own folder, so this is relative to it. */
export const PROFILES_PATH = "runs/profiles.json";

export interface ProfilesArgs {
  spec: FleetSpec;
  stack: string;
  engines: ReadonlyArray<{ spec: EngineSpec; engine: Engine }>;
  attestations: Readonly<Record<string, Attestation>>;
  engineApiKey: pulumi.Input<string>;
  /** The router host's alias and the connection its commands use (its verified key pinned). */
  routerHost: string;
  routerConnection: pulumi.Input<command.types.input.remote.ConnectionArgs>;
  /** `profiling.adoptStore`, read by the program's entry: the store and its sidecar with the digests of their bytes. */
  adopt?: AdoptSource;
}

/** Per engine, as the stack output shows it. */
export interface EngineProfileSummary {
  profileDigest: string;
  bindingDigest: string;
  fitErrors: ProfileFitErrors;
  evidence?: { relativePath: string; digest: string };
  /** Set when a fit over the preflight's limits was measured again: every sweep, the accepted one last. */
  fitTries?: ProfileFitTry[];
  /** With `profiling.adoptStore`: adopted from it, or measured and why. */
  adoption?: ProfileAdoption;
  /** Set when the accepted sweep's engine served other requests during it: why it was not reserved. */
  unreserved?: string[];
}

/**
 * Gate F's profiling half: one Profile per engine once it is attested, measured from the router host
 * (an SSH tunnel to the engine's private URL), concurrently across hosts and GPU groups and one after
 * another within a GPU group; then the store and its sidecar on the router host at `profiles.path`.
 */
export class ProfileMesh extends OpaqueComponent {
  public readonly profiles: Record<string, Profile>;
  public readonly store: ProfileStore;
  public readonly summary: pulumi.Output<{ engines: Record<string, EngineProfileSummary>; store: { path: string; digest: string; samplesPath: string; samplesDigest: string } }>;

  constructor(name: string, args: ProfilesArgs, opts?: pulumi.ComponentResourceOptions) {
    super("narwhal:profiles:ProfileMesh", name, {}, opts);
    const { spec, stack } = args;
    // adoptStore is read by the entry (args.adopt); the rest of the section is the sweep.
    const { adoptStore: _read, oneAtATime, fitAttempts, ...sweep }: { adoptStore?: string; oneAtATime?: boolean; fitAttempts: number } & Sweep = spec.profiling;
    const { adopt } = args;
    const via = loginInputs(args.routerConnection, args.routerHost);
    // Concurrently across hosts and GPU groups (the runbook), or one lane for the whole fleet. The GPU
    // groups are the ones each engine's plan resolved (every GPU of its host when the config names none).
    const placed = pulumi.all(args.engines.map(({ spec: e, engine }) => engine.plan.placement.apply((p) => ({ id: e.id, host: e.host, gpuIds: [...p.gpuIds] }))));
    const turnAfter = placed.apply((engines) => {
      const order = oneAtATime ? new Map(engines.map((e, i) => [e.id, engines[i - 1]?.id])) : previousInLane(engines);
      return Object.fromEntries(engines.map((e) => [e.id, order.get(e.id) ?? ""]));
    });
    this.profiles = {};
    for (const { spec: e, engine } of args.engines) {
      const a = args.attestations[e.id];
      const g = engine.generation;
      // Read once every profile is declared: the one before it in its lane is always earlier in the fleet's order.
      const after = turnAfter.apply((turns): pulumi.Resource[] => (turns[e.id] ? [a, this.profiles[turns[e.id]]] : [a]));
      this.profiles[e.id] = new Profile(
        `${name}-${e.id}`,
        {
          engineId: e.id,
          hostAlias: e.host,
          url: engine.url,
          servedName: spec.model.servedName,
          generationDigest: g.generationDigest,
          processStartTime: g.processStartTime,
          version: g.version,
          attestationDigest: a.attestationDigest,
          launchDigest: a.launchDigest,
          planSha256: engine.plan.planSha256,
          sweep,
          maxNumSeqs: engine.plan.apply((p) => maxNumSeqsOf(p.argv)),
          apiKey: args.engineApiKey,
          via: via.login,
          viaPrivateKey: via.privateKey,
          viaPassword: via.password,
          probeTimeoutS: spec.runtime.deadlinesS.inspect,
          requestTimeoutS: spec.slo.requestTimeoutS,
          stack,
          // The fleet document this program writes leaves the limits out, so the preflight applies
          // Narwhal's defaults; the profile is held to exactly those.
          fitLimits: NARWHAL_FIT_LIMITS,
          fitAttempts,
          ...(adopt ? { adopt } : {}),
        },
        // Engines sharing a GPU group take turns; the rest run side by side.
        { parent: this, dependsOn: after },
      );
      // Samples taken beside other traffic are not the runbook's idle figures; the output keeps why.
      this.profiles[e.id].reservation.apply((r) => {
        if (r && !r.idle) void pulumi.log.warn(`profile of ${e.id}: the engine was not reserved: ${r.reasons.join("; ")}`, this.profiles[e.id]);
      });
    }
    const stored = Object.values(this.profiles).map((p) =>
      pulumi.all([p.engineId, p.row, p.profileDigest, p.samples]).apply(([engineId, row, profileDigest, samples]) => ({ engineId, row, profileDigest, samples })),
    );
    this.store = new ProfileStore(
      `${name}-store`,
      {
        stack,
        path: `${stackDirOn(spec, args.routerHost, stack)}/router/${PROFILES_PATH}`,
        engineIds: spec.engines.map((e) => e.id),
        model: spec.model.servedName,
        sweep: sweepRecord(sweep),
        profiles: pulumi.all(stored),
        router: via.login,
        routerPrivateKey: via.privateKey,
        routerPassword: via.password,
      },
      { parent: this },
    );
    const engines = pulumi.all(
      Object.fromEntries(
        Object.entries(this.profiles).map(([id, p]) => [
          id,
          pulumi.all([p.profileDigest, p.bindingDigest, p.fitErrors, p.evidence, p.adoption, p.fitTries, p.reservation]).apply(([profileDigest, bindingDigest, fitErrors, evidence, adoption, fitTries, reservation]): EngineProfileSummary => ({
            profileDigest,
            bindingDigest,
            fitErrors,
            ...(evidence ? { evidence } : {}),
            ...(fitTries && fitTries.length > 1 ? { fitTries } : {}),
            ...(adoption ? { adoption } : {}),
            ...(reservation && !reservation.idle ? { unreserved: reservation.reasons } : {}),
          })),
        ]),
      ),
    );
    this.summary = pulumi.all([engines, this.store.path, this.store.storeDigest, this.store.samplesPath, this.store.samplesDigest]).apply(([engines, path, digest, samplesPath, samplesDigest]) => ({
      engines,
      store: { path, digest, samplesPath, samplesDigest },
    }));
    this.registerOutputs({ summary: this.summary });
  }
}

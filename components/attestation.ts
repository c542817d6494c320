import * as pulumi from "@pulumi/pulumi";
import * as command from "@pulumi/command";
import { OpaqueComponent } from "./opaque-component";
import type { EngineSpec, FleetSpec } from "../lib/config/types";
import { attestationDocument, transferFacts, type AttestationDocument } from "../lib/attestation/document";
import { chooseDocument } from "../lib/attestation/runbook-document";
import { engineContract, type FleetContract } from "../lib/attestation/contract";
import { sidecarEndpoint, sidecarStartScript, sidecarStopScript, type SidecarOptions } from "../lib/attestation/sidecar";
import { fleetDocument } from "../lib/fleet/fleet-document";
import { routerRestartPolicy, type RouterRestartPolicy } from "../lib/engine/restart-scope";
import { stackDirOn } from "../lib/fleet/state-dir";
import { Attestation } from "../dynamic-providers/attestation/resource";
import type { HostDiscovery } from "../dynamic-providers/host-discovery/resource";
import type { ReplicaAgreement } from "../dynamic-providers/replica-agreement/resource";
import type { Engine } from "./engine";
import { lastJsonLine } from "../lib/json-line";
import { startKeyOf } from "./runtime/start-key";
import type { NarwhalInstall } from "./router/install";

/** What attestation needs of each physical host: the connection its engines were started over, and its discovery. */
export interface AttestationHost {
  discovery: HostDiscovery;
  connection: command.types.input.remote.ConnectionArgs;
}

export interface AttestationMeshArgs {
  spec: FleetSpec;
  stack: string;
  hosts: ReadonlyMap<string, AttestationHost>;
  engines: ReadonlyArray<{ spec: EngineSpec; engine: Engine }>;
  /** Gate B per host alias: each engine host's install, whose `narwhal-attest` its sidecars run (unless `attestation.command`). */
  installs: ReadonlyMap<string, NarwhalInstall>;
  /** The fleet's accelerator product and TP shape, for the fleet document. */
  replicas: ReplicaAgreement;
  /** Fabric qualification (Gate D): no sidecar starts before it passed. */
  after: pulumi.Input<pulumi.Resource>[];
}

/** Per engine, as the stack output shows it. */
export interface EngineAttestationSummary {
  url: string;
  attestationDigest: string;
  contractFingerprint: string;
  evidence?: { relativePath: string; digest: string };
}

/**
 * Gate E: one attestation sidecar per engine (narwhal-inference's `narwhal-attest`, a process on the
 * engine's host whatever the engine's runtime), started after fabric qualification and concurrently
 * across engines, then one Attestation per engine that checks the sidecar binds that engine's proved
 * generation, and the fleet's `engine_contract` over all of them: a disagreement fails `pulumi up`
 * naming the field and the engines. The fleet document after attestation carries the contract.
 */
export class AttestationMesh extends OpaqueComponent {
  public readonly attestations: Record<string, Attestation>;
  public readonly engines: pulumi.Output<Record<string, EngineAttestationSummary>>;
  public readonly contract: pulumi.Output<FleetContract>;
  /** The `narwhal.fleet` document with every engine's `attestation_url` and the attested `engine_contract`. */
  public readonly fleetDocument: pulumi.Output<Record<string, unknown>>;
  /** narwhal's `recovery.engine_restart_policy` the document sets, and why (lib/engine/restart-scope.ts). */
  public readonly routerRestartPolicy: pulumi.Output<RouterRestartPolicy>;

  constructor(name: string, args: AttestationMeshArgs, opts?: pulumi.ComponentResourceOptions) {
    super("narwhal:attestation:AttestationMesh", name, {}, opts);
    const { spec } = args;
    this.attestations = {};
    for (const { spec: e, engine } of args.engines) {
      this.attestations[e.id] = this.attest(`${name}-${e.id}`, args, e, engine);
    }

    const attested = Object.entries(this.attestations).map(([id, a]) =>
      pulumi.all([a.contract, a.url, a.attestationDigest, a.contractFingerprint, a.evidence]).apply(([contract, url, attestationDigest, contractFingerprint, evidence]) => ({
        id,
        contract,
        summary: { url, attestationDigest, contractFingerprint, ...(evidence ? { evidence } : {}) },
      })),
    );
    // finalize-fleet: one contract for every engine, or a failure that names the field and the engines.
    this.contract = pulumi.all(attested).apply((all) => engineContract(all.map((a) => ({ engineId: a.id, contract: a.contract }))));
    this.engines = pulumi.all(attested).apply((all) => Object.fromEntries(all.map((a) => [a.id, a.summary])));
    const plans = pulumi.all(args.engines.map(({ engine }) => engine.plan));
    this.routerRestartPolicy = plans.apply(routerRestartPolicy);
    this.fleetDocument = pulumi
      .all([plans, this.contract, args.replicas.product, args.replicas.tensorParallelSize, this.routerRestartPolicy])
      .apply(([launchPlans, fleet, product, tp, { policy: restartPolicy }]) => {
        const endpoints = spec.engines.map((e) => {
          const url = launchPlans.find((p) => p.engineId === e.id)!.url;
          return { id: e.id, url, attestationUrl: sidecarEndpoint(url, e.attestationPort).url };
        });
        return fleetDocument(spec, endpoints, { accelerator: product ?? "none", acceleratorsPerEngine: tp, tensorParallel: tp }, { profilesPath: "runs/profiles.json", engineContract: fleet.contract, restartPolicy });
      });
    this.registerOutputs({ engines: this.engines, contract: this.contract });
  }

  /** The document, the sidecar that serves it and the attestation that checks it, for one engine. */
  private attest(name: string, args: AttestationMeshArgs, e: EngineSpec, engine: Engine): Attestation {
    const { spec, stack } = args;
    const host = args.hosts.get(e.host)!;
    const g = engine.generation;
    // pulumi.all types at most eight inputs, hence the engine's facts apart from the model and the check's.
    const engineFacts = pulumi.all([engine.plan, engine.cache.layout, engine.cache.cacheLayoutDigest, g.generationDigest, g.version, g.processIdentity, engine.imageCheck.identity]);
    const checkFacts = pulumi.all([host.discovery.model, engine.imageCheck.checkDigest, engine.imageCheck.findings]);
    const program: pulumi.Output<AttestationDocument> = pulumi
      .all([engineFacts, checkFacts])
      .apply(([[plan, layout, cacheLayoutDigest, generationDigest, version, processIdentity, identity], [model, checkDigest, findings]]) =>
        attestationDocument({
          engineId: e.id,
          plan,
          layout,
          cacheLayoutDigest,
          generation: { generationDigest, version, processIdentity },
          model: { architecture: model.architecture, numHiddenLayers: model.numHiddenLayers, configSha256: model.configSha256 },
          imageId: identity.kind === "docker" ? identity.imageId : undefined,
          // The image check read the NIXL versions inside the very runtime (native environment or image) the engine runs.
          transfer: transferFacts({ checkDigest, findings }),
        }),
      );
    // An adopted runbook engine keeps the document its runbook sidecar served while it is still true of
    // the live process, so evidence bound to that attestation (a runbook profile store) stays valid.
    const chosen = pulumi.all([program, engine.runbookAttestation, g.processStartTime]).apply(([own, runbook, start]) => chooseDocument(own, runbook, start));
    const document = chosen.document;
    const digest = chosen.digest;
    // The sidecar runs from the host's Gate B install unless the operator names a narwhal-attest of their own.
    const install = spec.attestation.command === undefined ? args.installs.get(e.host) : undefined;
    if (spec.attestation.command === undefined && !install) throw new pulumi.ResourceError(`engine ${e.id}: host ${e.host} has no narwhal install for its attestation sidecar`, this);
    const sidecarCommand = spec.attestation.command ?? `${install!.binDir}/narwhal-attest`;
    const sidecarOptions: pulumi.Output<SidecarOptions> = pulumi.all([chosen, engine.plan, g.processIdentity]).apply(([doc, plan, owner]) => ({
      engineId: e.id,
      command: sidecarCommand,
      runDir: `${stackDirOn(spec, e.host, stack)}/attestation/${e.id}`,
      document: doc.text,
      documentDigest: doc.digest,
      engineUrl: plan.url,
      owner,
      endpoint: sidecarEndpoint(plan.url, e.attestationPort),
      startTimeoutS: spec.attestation.startTimeoutS,
      stopTimeoutS: spec.runtime.deadlinesS.stop,
      ...(engine.runbookRun !== undefined ? { takeoverRun: engine.runbookRun } : {}),
    }));
    // A new document (a new generation, plan or layout), endpoint, command or install (a new revision) is a new
    // sidecar; anything else re-runs the idempotent start.
    const triggers = [digest, sidecarOptions.apply((o) => o.endpoint.url), sidecarCommand, ...(install ? [startKeyOf(install.command)] : [])];
    const sidecar = new command.remote.Command(
      `${name}-sidecar`,
      {
        connection: host.connection,
        create: sidecarOptions.apply(sidecarStartScript),
        delete: sidecarOptions.apply(sidecarStopScript),
        triggers,
        addPreviousOutputInEnv: false,
        logging: "stderr",
      },
      // The replacement binds the same port, so the old sidecar must be gone first.
      { parent: this, deleteBeforeReplace: true, dependsOn: install ? [...args.after, install.ready] : args.after },
    );
    const started = sidecar.stdout.apply((out) => lastJsonLine<{ pid: number; startedAt: string }>(out));
    return new Attestation(
      name,
      {
        engineId: e.id,
        hostAlias: e.host,
        url: sidecarOptions.apply((o) => o.endpoint.url),
        document,
        documentDigest: digest,
        ...(engine.runbookRun !== undefined ? { runbookDocument: chosen.apply((c) => (c.source === "runbook" ? { run: c.run, reason: c.reason } : undefined)) } : {}),
        generationDigest: g.generationDigest,
        processStartTime: g.processStartTime,
        version: g.version,
        processIdentity: g.processIdentity,
        planSha256: engine.plan.planSha256,
        cacheLayoutDigest: engine.cache.cacheLayoutDigest,
        sidecar: started,
        sidecarStartKey: startKeyOf(sidecar),
        probeTimeoutS: spec.attestation.startTimeoutS,
        stack,
      },
      { parent: this },
    );
  }
}

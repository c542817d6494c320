import * as pulumi from "@pulumi/pulumi";
import { readStackConfig } from "./entry/stack-config";
import { readLocalFiles } from "./entry/local-files";
import { knownHostsFiles } from "./entry/known-hosts";
import { Fleet, EngineSummary, HostSummary } from "./components/fleet";
import { logAdoptionForecast } from "./entry/adoption-forecast";
import { capacityOutput } from "./components/trial";
import { useEvidenceStore } from "./dynamic-providers/declare";
import { recordedOutputs } from "./entry/recorded-outputs";
import { recordedDeployment } from "./lib/rollout/decide";
import { engineIdentities as identitiesOf, evidenceByGate, type EngineIdentityOutput, type EvidenceOutput } from "./lib/fleet/stack-outputs";

const { spec, secrets, sshConfig } = readStackConfig();
// Every measurement keeps its evidence where the stack's config says (lib/evidence/stack-store.ts).
useEvidenceStore(spec.evidence.store);
// Every local file the components need is read here, once: components do no I/O.
const localFiles = readLocalFiles(spec, secrets, sshConfig);
// And the one local write, the docker backend's known_hosts, is the entry's too, called where the key is known.
const fleet = new Fleet("fleet", { spec, secrets, sshConfig, localFiles, knownHosts: knownHostsFiles(pulumi.getStack()), stack: pulumi.getStack(), recorded: recordedOutputs().then(recordedDeployment) });
// At preview, what the next up would adopt from a runbook deployment; logged on the fleet.
logAdoptionForecast(spec, fleet.discovery.hosts, fleet);

/** Per physical host: identity, verified host key fingerprint, accelerators and fabric address. */
export const hosts: pulumi.Output<Record<string, HostSummary>> = fleet.hosts;
/** Per engine: host alias, role, URL, process identity and the launch plan hash it runs. */
export const engines: pulumi.Output<Record<string, EngineSummary>> = fleet.engines;
/**
 * Rolling changes: per engine the rolling settings it runs (maxModelLen, maxNumSeqs, gpuMemoryUtilization,
 * engineArgs, engineEnv) and whether they are the config's; `rolling` while some engines keep their
 * previous ones for later ups, one engine per up (`wave` this one, `pending` the rest), and why.
 */
export const rollout = fleet.rollout;
/** Gate A across hosts: the shared checkpoint tree, accelerator product and TP shape of every replica. */
export const replicas = {
  modelTreeSha256: fleet.replicas.modelTreeSha256,
  product: fleet.replicas.product,
  tensorParallelSize: fleet.replicas.tensorParallelSize,
};
/** Gate A's generated configuration (hosts map, known hosts, launch records, fleet.json, deployment.env): digests and evidence paths only. */
export const deploymentConfig = {
  configDigest: fleet.deploymentConfig.configDigest,
  record: fleet.deploymentConfig.record,
  files: fleet.deploymentConfig.written,
};
/** Gate C's cache-equivalence groups (signature, representative, members, layout disagreements) with Gate D's fabric budget per geometry. */
export const cacheGroups = fleet.cacheGroups;
/** Gate D: the edge matrix (hosts × hosts, Gbit/s and verdict), each directed edge's figure, budget and evidence, and the matrix record. */
export const fabric = fleet.fabric.summary;
/** Gate E: per engine its sidecar's attestation URL, attestation digest and evidence; the fleet's engine_contract and the fleet document that carries it. */
export const attestation = { engines: fleet.attestation.engines, contract: fleet.attestation.contract, fleetDocument: fleet.attestation.fleetDocument };
/** Gate F: per engine its profile digest, binding digest and fit errors; the store on the router host (path, digests). */
export const profiles = fleet.profiles.summary;

/**
 * Gate F's preflight: the run's status as narwhal-check decides it (`pass`; `degraded`, with each
 * skipped gate and why in `skipped`; `fail`) and its `warnings`, each gate's verdict and lines, the
 * probes' rounds and the evidence record.
 */
export const preflight = {
  status: fleet.preflight.status,
  skipped: fleet.preflight.skipped,
  warnings: fleet.preflight.warnings,
  gates: fleet.preflight.gates.apply((gs) => Object.fromEntries(gs.map((g) => [g.gate, { verdict: g.verdict, lines: g.lines }]))),
  rounds: fleet.preflight.rounds,
  fleetDocumentDigest: fleet.preflight.fleetDocumentDigest,
  evidence: fleet.preflight.evidence,
};
/**
 * Gate F's first-token calibration, when enabled: the proposed engine.first_token_timeout_s, the one in
 * the document now, each group's figures, the client TTFT check, whether the sampled engines served
 * anything else meanwhile, and the evidence record.
 *
 * Exported only when calibration runs: an `export const` that is `undefined` still becomes a key of this
 * module, and Pulumi warns "Undefined value (firstTokenDeadline) will not show as a stack output" on
 * every up. Adding the key to `exports` only when there is a value leaves the output simply absent.
 */
const calibrated = fleet.calibration;
if (calibrated) {
  Object.assign(exports, {
    firstTokenDeadline: {
      proposedS: calibrated.deadlineS,
      currentS: calibrated.currentDeadlineS,
      floorS: calibrated.floorS,
      observationBoundS: calibrated.sampledUnderBoundS,
      groups: calibrated.groups,
      clientTtft: { deadlinePlusPrefillPlusOverheadS: calibrated.clientTtftS, requirementS: calibrated.clientTtftRequirementS, fits: calibrated.fitsClientTtft },
      samples: calibrated.samples,
      failedAttempts: calibrated.failedAttempts,
      evidence: calibrated.evidence,
      adoption: calibrated.adoption,
      reservation: calibrated.reservation,
    },
  });
}
/**
 * Gate G's capacity trial: per point, its verdict (`pass`, `slo-miss`, `unreconciled`), offered and
 * achieved rate, headline latencies against the profile fits' prediction, and its evidence record.
 */
export const capacity = capacityOutput(fleet.trialPoints);
/** The role-to-host plan, as the runbook's `deploy_hosts.py plan` prints it. */
export const deployment = {
  router: fleet.routerHost,
  engines: Object.fromEntries(spec.engines.map((e) => [e.id, { host: e.host, role: e.role }])),
};
/**
 * With `runtime.restartKvPeers`: per KV component, its engines and who restarts when one of them does
 * (`component`: all of them; `engine`: only that one), from their NIXL versions and launch plans, and why.
 */
if (fleet.restartScopes) Object.assign(exports, { restarts: fleet.restartScopes }); // absent, not undefined (see firstTokenDeadline)
/**
 * narwhal's `recovery.engine_restart_policy` in the fleet document, and why: `whole_wave` where an engine's
 * CUDA IPC peers keep a stopped peer's memory mapped (narwhal's peer_release), else `individual`.
 */
export const routerRestartPolicy = fleet.attestation.routerRestartPolicy;
/** The fleet document with every engine address replaced by its host alias (no credential is ever in it). */
export const fleetDocument = fleet.sanitisedFleetDocument;
/** Gate G: the router's URL (the router host's fabric address), once the router host is deployed. */
export const routerUrl = fleet.routerHostResources?.router.url;
/** Gate B: the router host's installed narwhal revision and the digest of its files (every host's is in its evidence record). */
export const narwhalInstall = fleet.routerHostResources?.install.marker;

/**
 * Per engine id: role, host alias, and the digests that pin it across gates (generation, attestation,
 * profile). What a consumer compares to know it talks to the fleet that was measured.
 */
export const engineIdentities: pulumi.Output<Record<string, EngineIdentityOutput>> = pulumi
  .all([fleet.engines, fleet.attestation.engines, fleet.profiles.summary])
  .apply(([generation, attested, profiled]) => identitiesOf(spec.engines, generation, attested, profiled.engines));

/**
 * Every evidence record the stack's gates wrote, per gate: kind, subject, path in `runs/<stack>/evidence`
 * and digest. Gates B and G run as command scripts; each keeps one record of its scripts and their output.
 */
export const evidence: pulumi.Output<EvidenceOutput> = pulumi
  .all([
    fleet.hosts,
    fleet.deploymentConfig.record,
    pulumi.all(fleet.engineParts.map(({ spec: e, engine }) => pulumi.all([engine.imageCheck.evidence, engine.generation.evidence, engine.cache.evidence]).apply((refs) => ({ id: e.id, refs })))),
    fleet.fabric.summary,
    fleet.attestation.engines,
    fleet.profiles.summary,
    fleet.preflight.evidence,
    pulumi.all([
      pulumi.all([...fleet.narwhalInstalls].map(([alias, install]) => install.record.evidence.apply((ref) => ({ alias, ref })))),
      fleet.routerHostResources?.records.router.evidence,
      pulumi.all(fleet.trialPoints.map((t) => pulumi.all([t.point, t.evidence]).apply(([point, ref]) => ({ id: point.id, ref })))),
    ]),
  ])
  .apply(([hostsOut, config, engineRefs, fabric, attested, profiled, preflightRef, [installRefs, routerRef, trialRefs]]) =>
    evidenceByGate([
      ...Object.entries(hostsOut).map(([alias, h]) => ({ gate: "A" as const, kind: "discovery", subject: `host ${alias}`, ref: h.evidence })),
      { gate: "A", kind: "deployment-config", subject: `fleet ${pulumi.getStack()}`, ref: config },
      ...engineRefs.flatMap(({ id, refs: [image, generation, cache] }) => [
        { gate: "C" as const, kind: "image-check", subject: `engine ${id}`, ref: image },
        { gate: "C" as const, kind: "generation", subject: `engine ${id}`, ref: generation },
        { gate: "C" as const, kind: "cache-capture", subject: `engine ${id}`, ref: cache },
      ]),
      ...Object.entries(fabric.edges).map(([edge, e]) => ({ gate: "D" as const, kind: "fabric-edge", subject: `edge ${edge}`, ref: e.evidence })),
      { gate: "D", kind: "fabric-matrix", subject: `fleet ${pulumi.getStack()}`, ref: fabric.evidence },
      ...Object.entries(attested).map(([id, a]) => ({ gate: "E" as const, kind: "attestation", subject: `engine ${id}`, ref: a.evidence })),
      ...Object.entries(profiled.engines).map(([id, p]) => ({ gate: "F" as const, kind: "profile", subject: `engine ${id}`, ref: p.evidence })),
      { gate: "F", kind: "preflight", subject: `fleet ${pulumi.getStack()}`, ref: preflightRef },
      ...installRefs.map(({ alias, ref }) => ({ gate: "B" as const, kind: "install", subject: `host ${alias}`, ref })),
      { gate: "G", kind: "router", subject: `host ${fleet.routerHost}`, ref: routerRef },
      ...trialRefs.map(({ id, ref }) => ({ gate: "G" as const, kind: "load-trial", subject: `trial ${id}`, ref })),
    ]),
  );

/**
 * Secret. The bearer credential the engines accept (the router's upstream key), for a consumer stack
 * that probes engines itself. Read through `StackReference.getOutput` it stays a Pulumi secret there too.
 */
export const engineApiKey: pulumi.Output<string> = pulumi.secret(secrets.engineApiKey);

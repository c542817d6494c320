import * as pulumi from "@pulumi/pulumi";
import { readStackConfig } from "./components/stack-config";
import { Fleet, EngineSummary, HostSummary } from "./components/fleet";

const { spec, secrets, sshConfig } = readStackConfig();
const fleet = new Fleet("fleet", { spec, secrets, sshConfig, stack: pulumi.getStack() });

/** Per physical host: identity, verified host key fingerprint, accelerators and fabric address. */
export const hosts: pulumi.Output<Record<string, HostSummary>> = fleet.hosts;
/** Per engine: host alias, role, URL, process identity and the launch plan hash it runs. */
export const engines: pulumi.Output<Record<string, EngineSummary>> = fleet.engines;
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

/** Gate F's preflight: each gate's verdict and lines, the probes' rounds and the evidence record. */
export const preflight = {
  gates: fleet.preflight.gates.apply((gs) => Object.fromEntries(gs.map((g) => [g.gate, { verdict: g.verdict, lines: g.lines }]))),
  rounds: fleet.preflight.rounds,
  fleetDocumentDigest: fleet.preflight.fleetDocumentDigest,
  evidence: fleet.preflight.evidence,
};
/**
 * Gate F's first-token calibration, when enabled: the proposed engine.first_token_timeout_s, the one in
 * the document now, each group's figures, the client TTFT check and the evidence record.
 */
export const firstTokenDeadline = fleet.calibration
  ? {
      proposedS: fleet.calibration.deadlineS,
      currentS: fleet.calibration.currentDeadlineS,
      floorS: fleet.calibration.floorS,
      observationBoundS: fleet.calibration.sampledUnderBoundS,
      groups: fleet.calibration.groups,
      clientTtft: { deadlinePlusPrefillPlusOverheadS: fleet.calibration.clientTtftS, requirementS: fleet.calibration.clientTtftRequirementS, fits: fleet.calibration.fitsClientTtft },
      samples: fleet.calibration.samples,
      failedAttempts: fleet.calibration.failedAttempts,
      evidence: fleet.calibration.evidence,
    }
  : undefined;
/** The role-to-host plan, as the runbook's `deploy_hosts.py plan` prints it. */
export const deployment = {
  router: fleet.routerHost,
  engines: Object.fromEntries(spec.engines.map((e) => [e.id, { host: e.host, role: e.role }])),
};
/** The fleet document with every engine address replaced by its host alias (no credential is ever in it). */
export const fleetDocument = fleet.sanitisedFleetDocument;
/** Gate G: the router's URL (the router host's fabric address), once the router host is deployed. */
export const routerUrl = fleet.routerHostResources?.router.url;
/** Gate B: the installed narwhal revision and the digest of its files. */
export const narwhalInstall = fleet.routerHostResources?.install.marker;

import * as pulumi from "@pulumi/pulumi";
import type * as command from "@pulumi/command";
import type { FleetSpec } from "../lib/config/types";
import { defaultInputLengths } from "../lib/preflight/calibration-run";
import { describeMismatches, type CalibrationAdoptSource } from "../lib/preflight/calibration-adopt";
import type { Attestation } from "../dynamic-providers/attestation/resource";
import { Calibration } from "../dynamic-providers/calibration/resource";
import type { Preflight } from "../dynamic-providers/preflight/resource";
import type { Engine } from "./engine";
import { loginInputs } from "./login-inputs";

export interface CalibrationArgs {
  spec: FleetSpec;
  stack: string;
  engines: ReadonlyArray<{ spec: FleetSpec["engines"][number]; engine: Engine }>;
  attestations: Readonly<Record<string, Attestation>>;
  /** The fleet document the router loads. */
  fleetDocument: pulumi.Input<Record<string, unknown>>;
  engineApiKey: pulumi.Input<string>;
  routerHost: string;
  routerConnection: pulumi.Input<command.types.input.remote.ConnectionArgs>;
  /** Calibration samples a fleet that passed its preflight. */
  preflight: Preflight;
  /** `calibration.adopt`, read by the program's entry: the file and the digest of its bytes. */
  adopt?: CalibrationAdoptSource;
}

/** Four deadlines' worth of waiting shows the tail without reaching the request timeout. */
export function defaultObservationBound(slo: FleetSpec["slo"]): number {
  return Math.min(slo.requestTimeoutS, 4 * slo.firstTokenTimeoutS);
}

/**
 * Gate F's first-token deadline calibration, opt-in (`calibration.enabled`), after preflight and beside
 * the router: it proposes engine.first_token_timeout_s and never holds the router back. New samples
 * follow a new model, runtime, transport, served context or engine generation; an SLO edit re-judges.
 * With `calibration.adopt`, a runbook calibration whose sampled processes still serve is adopted instead.
 */
export function calibration(name: string, args: CalibrationArgs, opts: pulumi.CustomResourceOptions): Calibration {
  const { spec } = args;
  const c = spec.calibration;
  const via = loginInputs(args.routerConnection, args.routerHost);
  const engines = args.engines.map(({ spec: e, engine }) => {
    const a = args.attestations[e.id];
    return pulumi.all([engine.generation.generationDigest, a.attestationDigest, a.launchDigest, engine.plan]).apply(([generationDigest, attestationDigest, launchDigest, plan]) => ({
      engineId: e.id,
      role: e.role,
      pin: e.pin,
      generationDigest,
      attestationDigest,
      ...(launchDigest ? { launchDigest } : {}),
      transport: plan.placement.transport,
      maxModelLen: plan.maxModelLen,
    }));
  });
  const all = pulumi.all(engines);
  const resource = new Calibration(
    name,
    {
      stack: args.stack,
      fleetDocument: args.fleetDocument,
      model: spec.model.servedName,
      runtime: { kind: spec.runtime.kind, ...(spec.runtime.image ? { image: spec.runtime.image } : {}) },
      engines: all,
      // The longest input every engine admits, so each path is sampled up to it.
      inputLengths: c.inputLengths ? [...c.inputLengths] : all.apply((es) => defaultInputLengths(Math.min(...es.map((e) => e.maxModelLen)))),
      samplesPerGroup: c.samplesPerGroup,
      observationBoundS: c.observationBoundS ?? defaultObservationBound(spec.slo),
      maxFailuresPerGroup: c.maxFailuresPerGroup,
      routerOverheadS: c.routerOverheadS,
      schedule: spec.preflight.schedule,
      apiKey: args.engineApiKey,
      via: via.login,
      viaPrivateKey: via.privateKey,
      viaPassword: via.password,
      ...(args.adopt ? { adopt: args.adopt } : {}),
    },
    pulumi.mergeOptions(opts, { dependsOn: [args.preflight] }),
  );
  // The up's log says which calibration the deadline comes from; the output keeps it.
  resource.adoption.apply((a) => {
    if (a?.verdict === "adopted") void pulumi.log.info(`calibration: adopted ${a.source.path} (${a.source.sha256}), sampled ${a.capturedAt}; no new samples`, resource);
    else if (a) void pulumi.log.warn(`calibration: ${a.source.path} not adopted (${describeMismatches(a.mismatches)}); measured afresh`, resource);
  });
  // Samples taken beside other traffic are not the runbook's idle figures; the output keeps why.
  resource.reservation.apply((r) => {
    if (r && !r.idle) void pulumi.log.warn(`calibration: the engines were not reserved while sampled: ${r.reasons.join("; ")}`, resource);
  });
  return resource;
}

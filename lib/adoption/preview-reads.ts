import * as fs from "node:fs";
import type { EngineSpec, FleetSpec, HostSpec } from "../config";
import { hostDiscoveryPlan } from "../fleet/host-plan";
import { blockingProblems, parseProbe, probeCommand, type ProbeOptions } from "../discovery/probe";
import { chooseFabricAddress } from "../discovery/fabric-address";
import { engineLaunchPlan, type DiscoveredHost } from "../launch/policy";
import { decideRunbookAdoption, surveyEnvKeys, type RunbookDecision } from "../launch/runbook";
import { forecastCalibration, forecastProfile, forecastRunbookEngine, parseSidecarAnswer, runbookAttestationUrl, type ForecastLine, type ForecastScope, type RunbookSighting } from "./forecast";
import { samplesPath, sha256Hex } from "../profiling";
import { parseSurvey, surveyScript } from "../runtime/runbook-survey";
import { shq } from "../shell";
import { withSsh, type SshSession } from "../ssh/client";
import { sshTarget, type HostLogin, type LoginPurpose, type SshTarget } from "../ssh/login";

/** Bound on each read of the forecast (the survey, the sidecar's answer). */
const READ_TIMEOUT_S = 10;

/** One host as the preview may reach it (only through keys pinned in the config), its credentials read. */
export interface ForecastHost {
  readonly spec: HostSpec;
  readonly login: HostLogin;
  readonly privateKey?: string;
  readonly password?: string;
}

/** A preview reads only through keys the config pins, the host's and its bastion's alike. */
const PREVIEW: LoginPurpose = { kind: "pinned", why: "a preview makes no first contact (npm run import pins it from NARWHAL_SSH_KNOWN_HOSTS)" };

/** The preview's discovery probe of one host: the hardware, fabric and model (not the runtime, the ports or the checkpoint hash, which no plan depends on). */
export function previewProbeOptions(spec: FleetSpec, host: HostSpec): ProbeOptions {
  return { alias: host.alias, fabricInterface: host.fabricInterface, fabricAddressChoice: host.fabricAddress, modelDir: hostDiscoveryPlan(spec, host).modelDir };
}

/**
 * What the engines' launch plans take from the host, read from the probe's output as the up's discovery
 * records it (dynamic-providers/host-discovery: the accelerators, the chosen fabric address, the model's
 * requirements). Throws with the probe's problems.
 */
export function discoveredFromProbe(host: HostSpec, output: string, opts: ProbeOptions): DiscoveredHost {
  const facts = parseProbe(output, opts);
  const problems = blockingProblems(facts);
  if (problems.length > 0) throw new Error(problems.join("; "));
  const fabricAddress = chooseFabricAddress(host.alias, host.fabricInterface, [...facts.fabric.addresses], host.fabricAddress);
  return { fabricAddress, accelerators: facts.accelerators, model: facts.model?.requirements };
}

async function probeHost(spec: FleetSpec, host: HostSpec, ssh: SshSession): Promise<DiscoveredHost> {
  const opts = previewProbeOptions(spec, host);
  const probe = probeCommand(opts);
  return discoveredFromProbe(host, await ssh.run(probe.command, { stdin: probe.stdin, timeoutS: probe.timeoutS, name: "discovery probe (preview forecast)" }), opts);
}

/** One probe per host, however many of its engines the forecast looks at. */
type HostFactsCache = Map<string, Promise<DiscoveredHost>>;

/** Reads one runbook launch directory, decides as the up would, and reads its sidecar's answer; never throws. */
async function sight(spec: FleetSpec, e: EngineSpec, h: ForecastHost, cache: HostFactsCache): Promise<RunbookSighting> {
  const engineId = e.id;
  const run = e.runbookRun!;
  let target: SshTarget;
  try {
    target = sshTarget({ ...h.login, privateKey: h.privateKey || undefined, password: h.password || undefined }, PREVIEW);
  } catch (err) {
    return { engineId, run, unseen: (err as Error).message };
  }
  try {
    return await withSsh(target, async (ssh) => {
      if (!cache.has(h.spec.alias)) cache.set(h.spec.alias, probeHost(spec, h.spec, ssh));
      // The function Gate A renders the engine's plan with (components/discovery.ts), so the forecast decides against the up's plan.
      const plan = await cache
        .get(h.spec.alias)!
        .then((discovered) => engineLaunchPlan(spec, e, discovered))
        .catch((err: Error) => ({ problem: `the discovery probe: ${err.message}` }));
      const planned = "problem" in plan ? undefined : plan;
      const script = surveyScript({ run, envKeys: planned ? surveyEnvKeys(planned) : [], dockerCommand: spec.runtime.dockerCommand, inspectTimeoutS: READ_TIMEOUT_S });
      const survey = parseSurvey(await ssh.run(script, { timeoutS: READ_TIMEOUT_S, name: "runbook survey (preview forecast)" }));
      const image = spec.runtime.kind === "native" ? undefined : spec.runtime.image;
      const decision: RunbookDecision | { problem: string } = planned ? decideRunbookAdoption({ plan: planned, image }, survey) : (plan as { problem: string });
      const url = runbookAttestationUrl(survey);
      if (!url) return { engineId, run, survey, decision, sidecar: { problem: "launch.json names no endpoint and attestation_port" } };
      const answer = await ssh.exec(`curl -fsS --max-time 5 ${shq(url)}`, { timeoutS: READ_TIMEOUT_S, name: "runbook sidecar (preview forecast)" });
      return { engineId, run, survey, decision, sidecar: answer.code === 0 ? parseSidecarAnswer(answer.stdout) : { problem: `${url}: curl exited ${answer.code}` } };
    });
  } catch (err) {
    return { engineId, run, unseen: `the preview could not read ${run} on ${h.spec.alias}: ${(err as Error).message}` };
  }
}

function readLocal(path: string): Uint8Array | undefined {
  try {
    return fs.readFileSync(path);
  } catch {
    return undefined;
  }
}

/**
 * What the preview's adoption forecast reads (lib/adoption/forecast.ts decides from it): per runbook
 * engine in `scope`, its launch directory, the up's decision and its sidecar's answer, over SSH to
 * `hosts` (keyed by alias); the adopted profile store and calibration record from local files. Each
 * read is bounded; an engine that cannot be read is reported as unseen, not thrown.
 */
export async function readForecast(spec: FleetSpec, scope: ForecastScope, hosts: ReadonlyMap<string, ForecastHost>): Promise<ForecastLine[]> {
  const cache: HostFactsCache = new Map();
  const seen = await Promise.all(scope.runbookEngines.map((e) => sight(spec, e, hosts.get(e.host)!, cache)));
  const sightings = new Map(seen.map((s) => [s.engineId, s]));
  const lines = seen.map(forecastRunbookEngine);
  const store = spec.profiling.adoptStore;
  const storeBytes = store ? readLocal(store) : undefined;
  const samplesBytes = store ? readLocal(samplesPath(store)) : undefined;
  if (store && storeBytes && samplesBytes) {
    const source = { storePath: store, storeSha256: `sha256:${sha256Hex(storeBytes)}`, samplesPath: samplesPath(store), samplesSha256: `sha256:${sha256Hex(samplesBytes)}` };
    for (const id of scope.profileEngines) lines.push(forecastProfile(id, sightings.get(id), source, storeBytes, samplesBytes));
  }
  const calibration = scope.calibration && spec.calibration.enabled ? spec.calibration.adopt : undefined;
  const calibrationBytes = calibration ? readLocal(calibration.path) : undefined;
  if (calibration && calibrationBytes) lines.push(forecastCalibration(calibration.path, calibrationBytes, spec.engines.map((e) => e.id), sightings));
  return lines;
}

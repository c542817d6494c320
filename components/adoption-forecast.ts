import * as fs from "node:fs";
import * as pulumi from "@pulumi/pulumi";
import type { EngineSpec, FleetSpec, HostSpec } from "../lib/config";
import { hostDiscoveryPlan } from "../lib/fleet/host-plan";
import { blockingProblems, parseProbe, probeCommand, type ProbeOptions } from "../lib/discovery/probe";
import { chooseFabricAddress } from "../lib/discovery/fabric-address";
import { renderLaunchPlan } from "../lib/launch/plan";
import { hostLaunchFacts, resolveEngineLaunch, type HostLaunchFacts } from "../lib/launch/policy";
import { decideRunbookAdoption, surveyEnvKeys, type RunbookDecision } from "../lib/launch/runbook";
import { forecastCalibration, forecastProfile, forecastRunbookEngine, forecastScope, formatForecast, mayForecast, parseSidecarAnswer, runbookAttestationUrl, type ForecastLine, type ForecastScope, type RunbookSighting } from "../lib/adoption/forecast";
import { samplesPath, sha256Hex } from "../lib/profiling";
import { parseSurvey, surveyScript } from "../lib/runtime/runbook-survey";
import { shq } from "../lib/shell";
import { withSsh, type SshSession } from "../lib/ssh/client";
import { sshTarget, type HostLogin, type LoginPurpose, type SshTarget } from "../lib/ssh/login";

/** Bound on each read of the forecast (the survey, the sidecar's answer). */
const READ_TIMEOUT_S = 10;

/** One host as the preview may reach it: only through keys pinned in the config. */
export interface ForecastHost {
  readonly spec: HostSpec;
  readonly login: HostLogin;
  readonly privateKey?: pulumi.Input<string>;
  readonly password?: pulumi.Input<string>;
}

/** A preview reads only through keys the config pins, the host's and its bastion's alike. */
const PREVIEW: LoginPurpose = { kind: "pinned", why: "a preview makes no first contact (npm run import pins it from NARWHAL_SSH_KNOWN_HOSTS)" };

/**
 * What the engines' launch plans take from the host, as the up's discovery will see it: its probe of
 * the hardware, fabric and model (not the runtime, the ports or the checkpoint hash, which no plan
 * depends on). Throws with the probe's problems.
 */
async function probeLaunchFacts(spec: FleetSpec, host: HostSpec, ssh: SshSession): Promise<HostLaunchFacts> {
  const opts: ProbeOptions = { alias: host.alias, fabricInterface: host.fabricInterface, fabricAddressChoice: host.fabricAddress, modelDir: hostDiscoveryPlan(spec, host).modelDir };
  const probe = probeCommand(opts);
  const facts = parseProbe(await ssh.run(probe.command, { stdin: probe.stdin, timeoutS: probe.timeoutS, name: "discovery probe (preview forecast)" }), opts);
  const problems = blockingProblems(facts);
  if (problems.length > 0) throw new Error(problems.join("; "));
  const fabricAddress = chooseFabricAddress(host.alias, host.fabricInterface, [...facts.fabric.addresses], host.fabricAddress);
  return hostLaunchFacts(host, fabricAddress, facts.accelerators, facts.model?.requirements);
}

/** One probe per host, however many of its engines the forecast looks at. */
type HostFactsCache = Map<string, Promise<HostLaunchFacts>>;

/** Reads one runbook launch directory, decides as the up would, and reads its sidecar's answer; never throws. */
async function sight(spec: FleetSpec, e: EngineSpec, h: ForecastHost, cache: HostFactsCache, privateKey?: string, password?: string): Promise<RunbookSighting> {
  const engineId = e.id;
  const run = e.runbookRun!;
  let target: SshTarget;
  try {
    target = sshTarget({ ...h.login, privateKey: privateKey || undefined, password: password || undefined }, PREVIEW);
  } catch (err) {
    return { engineId, run, unseen: (err as Error).message };
  }
  try {
    return await withSsh(target, async (ssh) => {
      if (!cache.has(h.spec.alias)) cache.set(h.spec.alias, probeLaunchFacts(spec, h.spec, ssh));
      const plan = await cache
        .get(h.spec.alias)!
        .then((facts) => renderLaunchPlan(resolveEngineLaunch(spec, e, facts)))
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

async function forecast(spec: FleetSpec, scope: ForecastScope, hosts: ReadonlyMap<string, ForecastHost>, credentials: ReadonlyMap<string, [string | undefined, string | undefined]>): Promise<ForecastLine[]> {
  const cache: HostFactsCache = new Map();
  const seen = await Promise.all(scope.runbookEngines.map((e) => sight(spec, e, hosts.get(e.host)!, cache, ...credentials.get(e.host)!)));
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

/**
 * The engines the stack's last deployment recorded in its `engines` output (none before its first up).
 * Read through the engine's builtin `readStackOutputs`, as a StackReference reads, without registering
 * a resource for it.
 */
async function recordedEngineIds(): Promise<ReadonlySet<string>> {
  const name = `${pulumi.getOrganization()}/${pulumi.getProject()}/${pulumi.getStack()}`;
  const read = (await pulumi.runtime.invoke("pulumi:pulumi:readStackOutputs", { name })) as { outputs?: Record<string, unknown> };
  const engines = read.outputs?.engines;
  return new Set(typeof engines === "object" && engines !== null ? Object.keys(engines) : []);
}

/**
 * At preview only: prints which runbook engines, profiles and calibration the next `up` would keep, and
 * which it will replace or measure, and why (lib/adoption/forecast.ts). It speaks only of engines the
 * stack does not record yet (forecastScope); once an up has brought them under the program, later
 * previews read nothing. The reads are read-only and go only to the hosts of engines with a runbookRun
 * whose keys the config pins; the preview never fails on them.
 */
export function logAdoptionForecast(spec: FleetSpec, hosts: ReadonlyArray<ForecastHost>, parent: pulumi.Resource): void {
  if (!pulumi.runtime.isDryRun() || !mayForecast(spec)) return;
  // The reads are not Pulumi resources: keep the program alive until their lines are logged (each read
  // is bounded), and should the credentials never resolve, not past the connect timeout.
  const done = pulumi.runtime.rpcKeepAlive();
  const unresolved = setTimeout(done, (spec.ssh.connectTimeoutS + 5) * 1000);
  const byAlias = new Map(hosts.map((h) => [h.spec.alias, h]));
  pulumi.all(hosts.map((h) => pulumi.all([h.privateKey, h.password]))).apply(async (creds) => {
    clearTimeout(unresolved);
    try {
      const scope = forecastScope(spec, await recordedEngineIds());
      if (!scope) return;
      const credentials = new Map(hosts.map((h, i) => [h.spec.alias, creds[i] as [string | undefined, string | undefined]]));
      for (const line of formatForecast(await forecast(spec, scope, byAlias, credentials))) await pulumi.log.info(line, parent);
    } catch (err) {
      await pulumi.log.warn(`adoption forecast: not made: ${(err as Error).message}`, parent);
    } finally {
      done();
    }
  });
}

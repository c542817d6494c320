/**
 * Pure helpers shared by the two container backends: the container target both hand to
 * lib/runtime/container-spec.ts, and the translation of that one spec into @pulumi/docker Container
 * fields. No Pulumi resource is made here.
 */
import type { RuntimeSpec } from "../config/types";
import { sha256Json } from "../digest";
import type { LaunchPlan } from "../launch/plan";
import { ContainerSpec, LABELS } from "./container-spec";
import type { ContainerTarget, DockerCliOptions, DockerDeadlinesS } from "./docker-cli";

/** Launch-token label value of a container the docker provider made: Pulumi state, not a token file, owns it. */
export const DOCKER_PROVIDER_TOKEN = "pulumi-docker";

/**
 * The container target of one engine, from the stack (GPUs, vendor and RDMA devices stay in the plan's
 * placement, where the container spec reads them). Throws when the runtime has no image (config
 * validation requires one).
 */
export function containerTarget(plan: LaunchPlan, runtime: RuntimeSpec, placement: ContainerPlacement): ContainerTarget {
  if (!runtime.image) {
    throw new Error(`engine ${plan.engineId}: runtime.kind "${runtime.kind}" runs the engine in a container and needs runtime.image (sha256:<64 hex> or <repo>@sha256:<64 hex>)`);
  }
  return {
    image: runtime.image,
    modelDir: placement.modelDir,
    engineId: plan.engineId,
    stack: placement.stack,
  };
}

/** The docker-cli script options of one engine. */
export function dockerCliOptions(runtime: RuntimeSpec, runDir: string): DockerCliOptions {
  return { runDir, dockerCommand: runtime.dockerCommand, deadlinesS: { ...runtime.deadlinesS } };
}

/** The @pulumi/docker Container fields one container spec maps to (no secrets: the API key is added apart). */
export interface DockerContainerFields {
  name: string;
  /** The immutable image reference itself: an image ID or a registry digest, never a tag. */
  image: string;
  /** The serve arguments: what follows the image's `vllm serve` entrypoint. */
  command: string[];
  /** `K=V` entries of the plan's environment (GPU visibility renumbered), without the API key. */
  envs: string[];
  labels: Array<{ label: string; value: string }>;
  networkMode?: string;
  ipcMode?: string;
  mounts: Array<{ type: string; source: string; target: string; readOnly: boolean }>;
  devices: Array<{ hostPath: string }>;
  /** docker's own `--gpus` value, parsed by the same docker/cli parser in the provider: `"device=2,3"`, quotes included. */
  gpus?: string;
  runtime?: string;
  groupAdds: string[];
  securityOpts: string[];
  capAdds: string[];
  ulimits: Array<{ name: string; soft: number; hard: number }>;
  /** The env file `docker run` would read; the docker backend passes the key as a secret env instead. */
  envFile?: string;
}

function fail(message: string): never {
  throw new Error(`docker backend: ${message}`);
}

function keyValue(flag: string, value: string): [string, string] {
  const eq = value.indexOf("=");
  if (eq <= 0) fail(`${flag} ${JSON.stringify(value)} is not KEY=VALUE`);
  return [value.slice(0, eq), value.slice(eq + 1)];
}

function parseMount(value: string): DockerContainerFields["mounts"][number] {
  const m: Record<string, string> = {};
  let readOnly = false;
  for (const part of value.split(",")) {
    if (part === "readonly" || part === "ro") readOnly = true;
    else {
      const [k, v] = keyValue("--mount", part);
      m[k] = v;
    }
  }
  if (!m.type || !m.source || !m.target) fail(`--mount ${JSON.stringify(value)} lacks type, source or target`);
  return { type: m.type, source: m.source, target: m.target, readOnly };
}

function parseUlimit(value: string): DockerContainerFields["ulimits"][number] {
  const [name, limits] = keyValue("--ulimit", value);
  const [soft, hard = soft] = limits.split(":").map(Number);
  if (!Number.isInteger(soft) || !Number.isInteger(hard)) fail(`--ulimit ${JSON.stringify(value)} is not name=soft[:hard]`);
  return { name, soft: soft, hard: hard };
}

/**
 * Reads the spec's own `docker run` argv into Container fields, so the docker backend runs exactly what
 * the docker-cli backend runs. Every flag container-spec.ts can produce is mapped; any other flag throws,
 * so a flag added there cannot be dropped silently here. `--pull never` has no Container field: the image
 * is referenced by ID or digest and never by tag, so there is no newer image a pull could choose.
 */
export function dockerContainerFields(spec: ContainerSpec): DockerContainerFields {
  const out: DockerContainerFields = {
    name: "", image: "", command: [], envs: [], labels: [], mounts: [], devices: [],
    groupAdds: [], securityOpts: [], capAdds: [], ulimits: [],
  };
  const argv = spec.runArgv;
  if (argv[0] !== "run") fail(`the container spec's argv must start with "run", got ${JSON.stringify(argv[0])}`);
  let i = 1;
  for (; i < argv.length; i++) {
    const flag = argv[i];
    if (!flag.startsWith("-")) break; // the image
    if (flag === "--detach") continue;
    const value = argv[++i];
    if (value === undefined) fail(`${flag} has no value`);
    switch (flag) {
      case "--name": out.name = value; break;
      case "--pull": if (value !== "never") fail(`--pull ${value}: only "never" is expected`); break;
      case "--network": out.networkMode = value; break;
      case "--ipc": out.ipcMode = value; break;
      case "--mount": out.mounts.push(parseMount(value)); break;
      case "--runtime": out.runtime = value; break;
      case "--gpus": out.gpus = value; break;
      case "--device": out.devices.push({ hostPath: value }); break;
      case "--group-add": out.groupAdds.push(value); break;
      case "--security-opt": out.securityOpts.push(value); break;
      case "--cap-add": out.capAdds.push(value); break;
      case "--ulimit": out.ulimits.push(parseUlimit(value)); break;
      case "--env-file": out.envFile = value; break;
      case "-e": keyValue(flag, value); out.envs.push(value); break;
      case "--label": {
        const [label, v] = keyValue(flag, value);
        out.labels.push({ label, value: label === LABELS.launchToken ? DOCKER_PROVIDER_TOKEN : v });
        break;
      }
      default:
        fail(`container-spec.ts produced ${flag}, which has no @pulumi/docker Container field here; map it in components/runtime/container-fields.ts`);
    }
  }
  out.image = argv[i] ?? fail("the container spec's argv has no image");
  if (out.image !== spec.image) fail(`the argv runs ${out.image} but the spec's image is ${spec.image}`);
  out.command = argv.slice(i + 1);
  if (JSON.stringify(out.command) !== JSON.stringify(spec.serveArgs)) fail("the argv's arguments after the image are not the spec's serve arguments");
  if (out.name !== spec.name) fail(`the argv names the container ${out.name} but the spec says ${spec.name}`);
  return out;
}

export interface DockerHealthcheck {
  tests: string[];
  interval: string;
  timeout: string;
  retries: number;
  startPeriod: string;
}

/** What the docker backend registers as its Container, besides the API key and the resource options. */
export interface DockerContainerSpec {
  fields: DockerContainerFields;
  healthcheck: DockerHealthcheck;
  /** This backend's own spec hash: the value of its `narwhal.fleet/spec-sha256` label. */
  specSha256: string;
}

/**
 * `/health` from inside the container (host network, so the plan's URL works): vLLM images ship Python,
 * and `/health` needs no API key. Failures within the start deadline do not count: weights take a while.
 */
export function healthcheck(url: string, deadlinesS: DockerDeadlinesS): DockerHealthcheck {
  return {
    tests: ["CMD", "python3", "-c", "import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)", `${url}/health`],
    interval: "5s",
    timeout: "3s",
    retries: 3,
    startPeriod: `${deadlinesS.start}s`,
  };
}

/**
 * The docker backend's container: the docker-cli spec's fields plus a healthcheck, labelled with a spec
 * hash of its own (over the fields and the healthcheck, API key and labels aside). It must differ from
 * the docker-cli spec hash: docker-cli's reconcile adopts a running container whose plan and spec labels
 * match its own, and a container this backend made must never be adopted, because the Container resource
 * that owns it deletes it when `runtime.kind` moves to docker-cli. With its own hash, docker-cli's
 * reconcile removes it instead, which is what the switch means.
 */
export function dockerContainerSpec(cliSpec: ContainerSpec, url: string, deadlinesS: DockerDeadlinesS): DockerContainerSpec {
  const fields = dockerContainerFields(cliSpec);
  const health = healthcheck(url, deadlinesS);
  const { labels, envFile, ...runs } = fields;
  const specSha256 = sha256Json({ backend: "@pulumi/docker", container: runs, healthcheck: health });
  return {
    fields: { ...fields, labels: labels.map((l) => (l.label === LABELS.specSha256 ? { label: l.label, value: specSha256 } : l)) },
    healthcheck: health,
    specSha256,
  };
}

/** What a container needs from the stack besides the plan (GPUs, vendor and RDMA devices are the plan's `placement`). */
export interface ContainerPlacement {
  /** Checkpoint directory on the host, mounted read-only at `/model`. */
  modelDir: string;
  /** Stack name: part of the container name and its `narwhal.fleet/stack` label. */
  stack: string;
}

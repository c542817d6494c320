/**
 * The runbook's `.env` (Gate A) as this program's stack config. Nodes become engines in node order;
 * nodes with the same `NARWHAL_NODE_<n>_SSH` destination share one host, as discovery groups them.
 * Fleet-wide launch fields go to `launch`/`slo`, `NARWHAL_NODE_<n>_<field>` to that engine's overrides
 * or that host; passwords and the engine API key become secrets. Every key is either used or reported
 * with the reason it is not.
 */
import { ALIAS_PATTERN, parseDestination } from "../config/formats";
import type { Draft } from "./draft";
import type { EnvEntry } from "./dotenv";
import type { KnownHostLookup } from "./known-hosts";
import { readGpuIds, readHttpUrl, readInt, readJsonArray, readJsonObject, readList, readNumber, type HttpEndpoint, type Read } from "./values";

/** Engine `n` of the runbook (its role `engine-<n>`), in node order. */
export interface NodeEngine {
  readonly n: number;
  /** Index in `engines`. */
  readonly index: number;
  readonly hostAlias: string;
  readonly destination: string;
  readonly fields: ReadonlyMap<string, EnvEntry>;
}

export interface EnvMapping {
  readonly nodes: ReadonlyArray<NodeEngine>;
  /** Where node `n`'s engine and attestation service are reached, when the `.env` says. */
  readonly urls: ReadonlyMap<number, { url?: HttpEndpoint; attestationUrl?: HttpEndpoint }>;
}

/** Fields the runbook's own tools own and this program replaces, with why they are not carried over. */
const NOT_CARRIED: Readonly<Record<string, string>> = {
  NARWHAL_DEPLOYMENT_REVISION: "names the runbook checkout's revision; this program is versioned by its own revision, recorded in every evidence record",
  NARWHAL_RUN_DIR: "the runbook's run folder; this program keeps each stack's runs under /var/lib/narwhal-fleet/<stack> on every host",
  NARWHAL_ENGINE_LAUNCHER: "this program launches engines itself (the launch plan is a resource); the runbook's launcher is not used",
  NARWHAL_ENGINE_LAUNCHER_SHA256: "this program launches engines itself; the runbook's launcher digest has nothing to check",
  NARWHAL_ENGINE_LAUNCH_CONFIG: "a per-role launch record of the runbook's launcher; this program derives the launch plan from discovery",
  NARWHAL_LAUNCH_CONFIG: "a launch record of the runbook's launcher; this program derives the launch plan from discovery",
  NARWHAL_FABRIC_BUDGET_TOOL: "the fabric budget is computed by this program from fabric.* budget inputs",
  NARWHAL_FABRIC_BUDGET_SHA256: "the fabric budget is computed by this program from fabric.* budget inputs",
  NARWHAL_MODEL_CONFIG_SHA256: "discovery hashes the checkpoint on every host afresh and compares replicas",
  NARWHAL_ROUTER_URL: "the router's address follows from router.host and router.port (default 8000)",
  MODEL_REPO_ID: "the checkpoint is identified by its file hashes on the hosts; keep the repository and revision in your private record",
  MODEL_REVISION: "the checkpoint is identified by its file hashes on the hosts; keep the repository and revision in your private record",
  NARWHAL_FLEET_PREFIX: "narwhal-fleet 0.1.2's .env format; rewrite the nodes as NARWHAL_NODE_<n>_SSH",
};

const NODE_KEY = /^NARWHAL_NODE_(\d+)_([A-Z0-9_]+)$/;
const LEGACY_NODE_KEY = /^NODE_\d+_(IP|USERNAME|PASSWORD|KEY|FABRIC|NAME)$/;

const NODE_FIELDS = new Set([
  "SSH",
  "SSH_PASSWORD",
  "IP",
  "URL",
  "ATTESTATION_URL",
  "GPU_IDS",
  "ENGINE_PORT",
  "ATTEST_PORT",
  "NIXL_SIDE_CHANNEL_PORT",
  "UCX_TCP_PORT_RANGE",
  "TENSOR_PARALLEL_SIZE",
  "MODEL_DTYPE",
  "BLOCK_SIZE",
  "ENGINE_ARGS",
  "ENGINE_ENV",
  "TRANSFER_TRANSPORT",
  "TRANSFER_NET_DEVICES",
  "TRANSFER_DEVICES",
  "TTFT_S",
  "TPOT_S",
]);

/** The runbook's dtype names as the launch schema spells them. */
const DTYPES: Readonly<Record<string, string>> = { auto: "model", model: "model", bfloat16: "bfloat16", bf16: "bfloat16", float16: "float16", fp16: "float16", half: "float16", float32: "float32", fp32: "float32", float: "float32" };

/** Host alias for a destination: an ssh_config alias keeps its name, anything else is `node-<n>`. */
function aliasFor(destination: string, n: number, taken: Set<string>): string {
  const plain = !destination.includes("@") && ALIAS_PATTERN.test(destination) && !/^\d/.test(destination);
  let alias = plain ? destination : `node-${n}`;
  for (let k = 2; taken.has(alias); k++) alias = `${plain ? destination : `node-${n}`}-${k}`;
  taken.add(alias);
  return alias;
}

/** Reads `.env` entries into the draft; returns the engines found, for fleet.json to name. */
export interface EnvOptions {
  readonly knownHostKeys?: KnownHostLookup;
  /** A private key is supplied for the stack (`sshPrivateKey`): direct destinations log in with it, not the agent. */
  readonly stackKey?: boolean;
}

export function mapEnv(entries: ReadonlyArray<EnvEntry>, d: Draft, opts: EnvOptions = {}): EnvMapping {
  const { knownHostKeys } = opts;
  const byKey = new Map<string, EnvEntry>();
  for (const e of entries) {
    if (byKey.has(e.key)) d.skip(`${e.key} (line ${byKey.get(e.key)!.line})`, `set again on line ${e.line}; the later value wins, as in the shell`);
    byKey.set(e.key, e);
  }
  const nodeFields = new Map<number, Map<string, EnvEntry>>();
  const global = new Map<string, EnvEntry>();
  for (const [key, e] of byKey) {
    const m = NODE_KEY.exec(key);
    if (m && NODE_FIELDS.has(m[2])) {
      const n = Number(m[1]);
      if (!nodeFields.has(n)) nodeFields.set(n, new Map());
      nodeFields.get(n)!.set(m[2], e);
    } else if (m) d.skip(key, `not a per-node field this program knows (per-node fields: ${[...NODE_FIELDS].join(", ")})`);
    else if (LEGACY_NODE_KEY.test(key)) d.skip(key, "narwhal-fleet 0.1.2's .env format; rewrite the node as NARWHAL_NODE_<n>_SSH (and _SSH_PASSWORD)");
    else global.set(key, e);
  }
  const consumed = new Set<string>();
  const take = (key: string): EnvEntry | undefined => {
    consumed.add(key);
    return global.get(key);
  };
  const use = <T>(key: string, read: (text: string) => Read<T>, apply: (v: T) => void): void => {
    const e = take(key);
    if (!e) return;
    const r = read(e.value);
    if (r.ok) apply(r.value);
    else d.problem(key, r.problem);
  };

  // Hosts and engines, in node order.
  const nodes: NodeEngine[] = [];
  const hostByDestination = new Map<string, { alias: string; index: number; nodes: number[] }>();
  const taken = new Set<string>();
  const ordered = [...nodeFields.keys()].sort((a, b) => a - b);
  for (const n of ordered) {
    const fields = nodeFields.get(n)!;
    const ssh = fields.get("SSH");
    if (!ssh) {
      d.problem(`NARWHAL_NODE_${n}_SSH`, `missing, but ${[...fields.keys()].map((f) => `NARWHAL_NODE_${n}_${f}`).join(", ")} ${fields.size === 1 ? "is" : "are"} set: every engine needs its SSH destination`);
      continue;
    }
    const destination = ssh.value.trim();
    const parsed = parseDestination(destination, false);
    if (!parsed.ok) {
      d.problem(ssh.key, `${parsed.problem.replace(/^found "[^"]*"/, "the destination")}; expected "user@host" or an ssh_config alias (the SSH port belongs in the alias)`);
      continue;
    }
    let host = hostByDestination.get(destination);
    if (!host) {
      const alias = aliasFor(destination, n, taken);
      host = { alias, index: hostByDestination.size, nodes: [] };
      hostByDestination.set(destination, host);
      d.set(["hosts", host.index], { alias, destination }, ssh.key);
      const pin = knownHostKeys?.(parsed.value.host, 22);
      if (pin) d.set(["hosts", host.index, "hostKey"], pin, "NARWHAL_SSH_KNOWN_HOSTS");
    }
    host.nodes.push(n);
    nodes.push({ n, index: nodes.length, hostAlias: host.alias, destination, fields });
  }

  // Router: with the lowest-numbered engine's host unless NARWHAL_ROUTER_SSH names another.
  const knownHosts = take("NARWHAL_SSH_KNOWN_HOSTS");
  if (knownHosts && !knownHostKeys) d.skip(knownHosts.key, "the file it names could not be read; host keys are recorded on first contact instead (ssh.allowFirstContact)");
  const routerSsh = take("NARWHAL_ROUTER_SSH");
  const routerPassword = take("NARWHAL_ROUTER_SSH_PASSWORD");
  let routerAlias: string | undefined;
  if (routerSsh) {
    const destination = routerSsh.value.trim();
    const parsed = parseDestination(destination, false);
    if (!parsed.ok) d.problem(routerSsh.key, `${parsed.problem.replace(/^found "[^"]*"/, "the destination")}; expected "user@host" or an ssh_config alias`);
    else {
      let host = hostByDestination.get(destination);
      if (!host) {
        const alias = aliasFor(destination, 0, taken) === "node-0" ? "router" : destination;
        taken.add(alias);
        host = { alias, index: hostByDestination.size, nodes: [] };
        hostByDestination.set(destination, host);
        d.set(["hosts", host.index], { alias, destination }, routerSsh.key);
        const pin = knownHostKeys?.(parsed.value.host, 22);
        if (pin) d.set(["hosts", host.index, "hostKey"], pin, "NARWHAL_SSH_KNOWN_HOSTS");
      }
      routerAlias = host.alias;
      d.set(["router", "host"], host.alias, routerSsh.key);
    }
  } else if (routerPassword) d.skip(routerPassword.key, "NARWHAL_ROUTER_SSH is not set: the router shares the first engine's host and its credential");

  // Credentials: a password makes the host a password host; otherwise keys (ssh_config identity) or the agent.
  const passwords = new Map<string, { value: string; key: string }>();
  const claim = (alias: string, e: EnvEntry) => {
    const prior = passwords.get(alias);
    if (prior && prior.value !== e.value) d.problem(e.key, `differs from ${prior.key}, but both log in to host ${alias} (the same destination): one host has one credential`);
    else if (!prior) passwords.set(alias, { value: e.value, key: e.key });
  };
  for (const node of nodes) {
    const pw = node.fields.get("SSH_PASSWORD");
    if (pw) claim(node.hostAlias, pw);
  }
  if (routerPassword && routerAlias) claim(routerAlias, routerPassword);
  for (const [destination, host] of hostByDestination) {
    const pw = passwords.get(host.alias);
    if (pw) {
      d.set(["hosts", host.index, "auth"], "password", pw.key);
      d.secret(`sshPasswords.${host.alias}`, pw.value, pw.key, true);
    } else if (destination.includes("@") && !opts.stackKey) {
      // A direct user@host without a password: the runbook falls back to the SSH agent.
      d.set(["hosts", host.index, "auth"], "agent", `NARWHAL_NODE_${host.nodes[0] ?? 0}_SSH`);
    }
  }

  // Per node: engine, host-level address overrides, and launch overrides.
  const urls = new Map<number, { url?: HttpEndpoint; attestationUrl?: HttpEndpoint }>();
  const hostAddress = new Map<string, { ip?: { value: string; key: string }; urlHost?: { value: string; key: string } }>();
  const hostFact = (alias: string, kind: "ip" | "urlHost", value: string, key: string, configKey: string) => {
    const facts = hostAddress.get(alias) ?? {};
    hostAddress.set(alias, facts);
    const prior = facts[kind];
    if (prior && prior.value !== value) {
      d.problem(key, `differs from ${prior.key}, but both engines run on host ${alias}; ${configKey} is one value per host`);
      return;
    }
    if (prior) return;
    facts[kind] = { value, key };
    d.set(["hosts", hostByDestination.get(nodes.find((x) => x.hostAlias === alias)!.destination)!.index, configKey], value, key);
  };
  for (const node of nodes) {
    const i = node.index;
    const f = (name: string) => node.fields.get(name);
    const nodeKey = (name: string) => `NARWHAL_NODE_${node.n}_${name}`;
    d.set(["engines", i], { id: `engine-${node.n}`, host: node.hostAlias }, nodeKey("SSH"));
    const read = <T>(name: string, reader: (t: string) => Read<T>, apply: (v: T) => void) => {
      const e = f(name);
      if (!e) return;
      const r = reader(e.value);
      if (r.ok) apply(r.value);
      else d.problem(e.key, r.problem);
    };
    read("IP", (t) => ({ ok: true, value: t.trim() }), (ip) => hostFact(node.hostAlias, "ip", ip, nodeKey("IP"), "fabricAddress"));
    read("GPU_IDS", readGpuIds, (ids) => d.set(["engines", i, "gpuIds"], ids, nodeKey("GPU_IDS")));
    read("ENGINE_PORT", (t) => readInt(t, "a port"), (p) => d.set(["engines", i, "port"], p, nodeKey("ENGINE_PORT")));
    read("ATTEST_PORT", (t) => readInt(t, "a port"), (p) => d.set(["engines", i, "attestationPort"], p, nodeKey("ATTEST_PORT")));
    read("NIXL_SIDE_CHANNEL_PORT", (t) => readInt(t, "a port"), (p) => d.set(["engines", i, "nixlPort"], p, nodeKey("NIXL_SIDE_CHANNEL_PORT")));
    read("UCX_TCP_PORT_RANGE", (t) => ({ ok: true, value: t.trim() }), (r) => d.set(["engines", i, "transferPortRange"], r, nodeKey("UCX_TCP_PORT_RANGE")));
    const endpoints: { url?: HttpEndpoint; attestationUrl?: HttpEndpoint } = {};
    read("URL", readHttpUrl, (u) => {
      if (u.path) d.problem(nodeKey("URL"), "has a path; the engine URL is the base http://<address>:<port> the router and probes append routes to");
      else endpoints.url = u;
    });
    read("ATTESTATION_URL", readHttpUrl, (u) => {
      if (u.path && u.path !== "/v1/attestation") d.problem(nodeKey("ATTESTATION_URL"), "has a path other than /v1/attestation, the sidecar's only route");
      else endpoints.attestationUrl = u;
    });
    if (endpoints.url || endpoints.attestationUrl) urls.set(node.n, endpoints);
    mapLaunch(d, (name) => f(name), ["engines", i, "overrides"], "per-engine");
  }

  // Node URLs: the host part becomes the host's urlHost, a port the engine's own port.
  for (const node of nodes) applyEndpoints(d, node, urls.get(node.n), hostFact);

  // Fleet-wide fields.
  use("NARWHAL_ENGINE_MODEL_NAME", (t) => ({ ok: true, value: t }), (v) => d.set(["model", "servedName"], v, "NARWHAL_ENGINE_MODEL_NAME"));
  use("NARWHAL_MODEL_DIR", (t) => ({ ok: true, value: t.replace(/\/+$/, "") || "/" }), (v) => d.set(["model", "checkpointDir"], v, "NARWHAL_MODEL_DIR"));
  use("NARWHAL_ENGINE_IMAGE", (t) => ({ ok: true, value: t.trim() }), (v) => {
    // The runbook runs engines in its pinned image; docker-cli does the same over each host's docker.
    d.set(["runtime", "kind"], "docker-cli", "NARWHAL_ENGINE_IMAGE");
    d.set(["runtime", "image"], v, "NARWHAL_ENGINE_IMAGE");
  });
  use("NARWHAL_FABRIC_INTERFACE", (t) => ({ ok: true, value: t.trim() }), (v) => d.set(["fabric", "interface"], v, "NARWHAL_FABRIC_INTERFACE"));
  use("NARWHAL_UCX_TCP_PORT_RANGE", (t) => ({ ok: true, value: t.trim() }), (v) => d.set(["launch", "ucxTcpPortRange"], v, "NARWHAL_UCX_TCP_PORT_RANGE"));
  for (const [key, field] of [
    ["NARWHAL_ENGINE_PORT", "port"],
    ["NARWHAL_ATTEST_PORT", "attestationPort"],
    ["NARWHAL_NIXL_SIDE_CHANNEL_PORT", "nixlPort"],
  ] as const) {
    use(key, (t) => readInt(t, "a port"), (p) => {
      for (const node of nodes) if (d.get(["engines", node.index, field]) === undefined) d.set(["engines", node.index, field], p, key);
    });
  }
  use("NARWHAL_GPU_IDS", readGpuIds, (ids) => {
    for (const node of nodes) if (d.get(["engines", node.index, "gpuIds"]) === undefined) d.set(["engines", node.index, "gpuIds"], ids, "NARWHAL_GPU_IDS");
  });
  mapLaunch(d, (name) => take(`NARWHAL_${name}`), ["launch"], "fleet");
  use("NARWHAL_TTFT_S", (t) => readNumber(t, "seconds"), (v) => d.set(["slo", "ttftS"], v, "NARWHAL_TTFT_S"));
  use("NARWHAL_TPOT_S", (t) => readNumber(t, "seconds"), (v) => d.set(["slo", "tpotS"], v, "NARWHAL_TPOT_S"));
  const apiKey = take("NARWHAL_ENGINE_API_KEY");
  if (apiKey && apiKey.value !== "") d.secret("engineApiKey", apiKey.value, apiKey.key);
  else if (apiKey) d.skip(apiKey.key, "empty; engines require an API key: set one with `pulumi config set --secret engineApiKey`");

  for (const [key, e] of global) {
    if (consumed.has(key)) continue;
    if (NOT_CARRIED[key]) d.skip(key, NOT_CARRIED[key]);
    else if (key.startsWith("NARWHAL_")) d.skip(key, "not a runbook field this importer knows");
    else d.skip(`${key} (line ${e.line})`, "not a runbook field; left out (its value is not read)");
  }
  return { nodes, urls };
}

/** Launch policy fields, fleet-wide (`NARWHAL_<field>`) or per engine (`NARWHAL_NODE_<n>_<field>`). */
function mapLaunch(d: Draft, field: (name: string) => EnvEntry | undefined, at: Array<string | number>, scope: "fleet" | "per-engine"): void {
  const put = <T>(name: string, reader: (t: string) => Read<T>, path: Array<string | number>) => {
    const e = field(name);
    if (!e) return;
    const r = reader(e.value);
    if (r.ok) d.set([...at, ...path], r.value, e.key);
    else d.problem(e.key, r.problem);
  };
  put("TENSOR_PARALLEL_SIZE", (t) => readInt(t, "a tensor parallel size"), ["tensorParallelSize"]);
  put("MODEL_DTYPE", (t) => (DTYPES[t.trim().toLowerCase()] ? { ok: true, value: DTYPES[t.trim().toLowerCase()] } : { ok: false, problem: `expected one of ${Object.keys(DTYPES).join(", ")}` }), ["dtype"]);
  put("BLOCK_SIZE", (t) => readInt(t, "a block size in tokens"), ["blockSize"]);
  put("ENGINE_ARGS", readJsonArray, ["engineArgs"]);
  put("ENGINE_ENV", readJsonObject, ["engineEnv"]);
  put("TRANSFER_TRANSPORT", (t) => ({ ok: true, value: t.trim() }), ["transport"]);
  put("TRANSFER_NET_DEVICES", (t) => ({ ok: true, value: readList(t) }), ["rdma", "hcas"]);
  put("TRANSFER_DEVICES", (t) => ({ ok: true, value: readList(t) }), ["rdma", "devices"]);
  if (scope === "per-engine") {
    put("TTFT_S", (t) => readNumber(t, "seconds"), ["slo", "ttftS"]);
    put("TPOT_S", (t) => readNumber(t, "seconds"), ["slo", "tpotS"]);
  }
  const devicesOnly = d.get([...at, "rdma"]) as { hcas?: unknown } | undefined;
  if (devicesOnly && devicesOnly.hcas === undefined) {
    d.problem(field("TRANSFER_DEVICES")?.key ?? "TRANSFER_DEVICES", "RDMA device paths need the HCA:port entries they serve: set the matching TRANSFER_NET_DEVICES too");
  }
}

function applyEndpoints(
  d: Draft,
  node: NodeEngine,
  endpoints: { url?: HttpEndpoint; attestationUrl?: HttpEndpoint } | undefined,
  hostFact: (alias: string, kind: "ip" | "urlHost", value: string, key: string, configKey: string) => void,
): void {
  if (!endpoints) return;
  const ip = node.fields.get("IP")?.value.trim();
  for (const [kind, portField, explicit] of [
    ["url", "port", "ENGINE_PORT"],
    ["attestationUrl", "attestationPort", "ATTEST_PORT"],
  ] as const) {
    const u = endpoints[kind];
    if (!u) continue;
    const key = `NARWHAL_NODE_${node.n}_${kind === "url" ? "URL" : "ATTESTATION_URL"}`;
    if (u.host !== ip) hostFact(node.hostAlias, "urlHost", u.host, key, "urlHost");
    const own = node.fields.get(explicit);
    if (own && Number(own.value) !== u.port) {
      d.skip(key, `its port ${u.port} differs from ${own.key}; this program serves and reaches an engine on one port, so ${own.key} is used (forwarded ports are not supported)`);
    } else if (!own) d.set(["engines", node.index, portField], u.port, key);
  }
}

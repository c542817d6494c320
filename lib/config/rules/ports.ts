/**
 * Listening ports per host. The runbook blocks a launch while any planned HTTP, attestation, NIXL
 * side-channel or transfer port is taken, so every service's ports on one host must be disjoint:
 * engines among themselves and against their own ports, the router, Prometheus, Grafana and iperf3.
 */
import { parsePortRange } from "../formats";
import type { PathSegment } from "../errors";
import { engineName, type Rule, type RuleInput } from "./context";
import { routerBackendPort } from "../../router/front";

interface Claim {
  readonly path: PathSegment[];
  /** Who listens, in words: "engine e1's port". */
  readonly label: string;
  readonly lo: number;
  readonly hi: number;
  /** Index of the engine that owns the claim, if any. */
  readonly engine?: number;
  /** A transfer range inherited from `launch.ucxTcpPortRange` rather than set for the engine. */
  readonly inherited?: boolean;
  /** A single port the config leaves to its default (engine ports count up from a base per index). */
  readonly defaulted?: boolean;
}

/** Claims per host alias, in the order they are checked: a clash is reported at the later claim. */
function claimsByHost(ctx: RuleInput): Map<string, Claim[]> {
  const byHost = new Map<string, Claim[]>();
  const add = (host: string, claim: Claim) => byHost.set(host, [...(byHost.get(host) ?? []), claim]);
  const sharedRange = ctx.launch.value.ucxTcpPortRange;

  ctx.engines.forEach((engine, i) => {
    const e = engine.value;
    if (e.host === undefined) return;
    const name = engineName(ctx, i);
    // The range first, so a single port inside it is the one reported ("choose a port outside ...").
    const own = e.transferPortRange;
    const range = parsePortRange(own ?? (engine.failed.has("transferPortRange") ? "" : (sharedRange ?? "")));
    if (range) {
      const inherited = own === undefined;
      const label = `engine ${name}'s transfer ports${inherited ? " (launch.ucxTcpPortRange)" : ""}`;
      add(e.host, { path: ["engines", i, "transferPortRange"], label, ...range, engine: i, inherited });
    }
    for (const key of ["port", "attestationPort", "nixlPort"] as const) {
      const port = e[key];
      const path = ["engines", i, key];
      if (port !== undefined) add(e.host, { path, label: `engine ${name}'s ${key}`, lo: port, hi: port, engine: i, defaulted: !ctx.written(path) });
    }
  });

  const routerHost = ctx.router.value.host ?? (ctx.router.failed.has("host") ? undefined : ctx.engines[0]?.value.host);
  if (routerHost !== undefined) {
    const single = (path: PathSegment[], label: string, port: number | undefined) =>
      port !== undefined && add(routerHost, { path, label, lo: port, hi: port, defaulted: !ctx.written(path) });
    single(["router", "port"], "the router port", ctx.router.value.port);
    if (ctx.router.value.port !== undefined) single(["router", "backendPort"], "the router's backend port", routerBackendPort(ctx.router.value as { port: number; backendPort?: number }));
    if (ctx.observability.value.enabled) {
      single(["observability", "prometheusPort"], "the Prometheus port", ctx.observability.value.prometheusPort);
      single(["observability", "grafanaPort"], "the Grafana port", ctx.observability.value.grafanaPort);
      single(["observability", "freshnessPort"], "the evidence freshness exporter's port", ctx.observability.value.freshnessPort);
    }
  }

  // iperf3 listens on every engine host while the fabric is measured.
  const iperf = ctx.fabric.value.iperfPort;
  if (iperf !== undefined) {
    for (const host of new Set(ctx.engines.map((e) => e.value.host))) {
      if (host !== undefined) add(host, { path: ["fabric", "iperfPort"], label: "the iperf3 port", lo: iperf, hi: iperf, defaulted: !ctx.written(["fabric", "iperfPort"]) });
    }
  }
  // ib_write_bw's exchange port, on every host of a ucx_rdma engine while the fabric is measured.
  const rdma = ctx.fabric.value.rdmaPort;
  if (rdma !== undefined && !ctx.launch.failed.has("transport")) {
    const hosts = ctx.engines.filter((e) => (e.value.overrides?.transport ?? ctx.launch.value.transport) === "ucx_rdma").map((e) => e.value.host);
    for (const host of new Set(hosts)) {
      if (host !== undefined) add(host, { path: ["fabric", "rdmaPort"], label: "the ib_write_bw port", lo: rdma, hi: rdma, defaulted: !ctx.written(["fabric", "rdmaPort"]) });
    }
  }
  return byHost;
}

const show = (c: Claim) => (c.lo === c.hi ? `${c.label} ${c.lo}${c.defaulted ? " (its default)" : ""}` : `${c.label} ${c.lo}-${c.hi}`);

/** `, e.g. "lo-hi"`: a free range as wide as `claim`, above every other range on the host. */
function freeRangeExample(claim: Claim, all: Claim[]): string {
  const others = all.filter((c) => c !== claim);
  const width = claim.hi - claim.lo;
  const ranges = others.filter((c) => c.lo !== c.hi);
  let lo = ranges.length > 0 ? Math.max(...ranges.map((c) => c.hi)) + 1 : claim.lo;
  for (let taken = others.find((c) => c.lo <= lo + width && lo <= c.hi); taken; taken = others.find((c) => c.lo <= lo + width && lo <= c.hi)) {
    lo = taken.hi + 1;
  }
  return lo + width <= 65535 ? `, e.g. "${lo}-${lo + width}"` : "";
}

function fix(host: string, later: Claim, earlier: Claim, all: Claim[]): string {
  const laterIsRange = later.lo !== later.hi;
  const earlierIsRange = earlier.lo !== earlier.hi;
  if (laterIsRange && earlierIsRange) return `give each engine on host ${host} its own transferPortRange${freeRangeExample(later, all)}`;
  if (laterIsRange) return `choose a transferPortRange that leaves out port ${earlier.lo}${freeRangeExample(later, all)}`;
  if (earlierIsRange) return `choose a port outside ${earlier.lo}-${earlier.hi}`;
  if (later.engine !== undefined && later.engine === earlier.engine) return "an engine's port, attestationPort and nixlPort must all differ";
  return `choose a port that no other service on host ${host} uses`;
}

export const portRules: Rule = (ctx, report) => {
  const router = ctx.router.value;
  if (router.port !== undefined && router.backendPort === undefined && router.port === 65535) {
    report(["router", "backendPort"], "router.port 65535 leaves no port above it for the router's backend (router.port + 1); set router.backendPort to a free port");
  }
  for (const [host, claims] of claimsByHost(ctx)) {
    claims.forEach((later, j) => {
      const earlier = claims.slice(0, j).find(
        (c) =>
          c.lo <= later.hi &&
          later.lo <= c.hi &&
          // One shared launch.ucxTcpPortRange is a pool UCX picks free ports from; only ranges an
          // engine claims for itself must stay apart from everything else.
          !(c.inherited && later.inherited && c.lo === later.lo && c.hi === later.hi),
      );
      if (!earlier) return;
      // Reported at the value the user wrote when the other one is only a default: that is the field
      // they know about, and naming a field they never set sends them looking for it.
      const [at, other] = later.defaulted && !earlier.defaulted ? [earlier, later] : [later, earlier];
      const verb = at.lo === at.hi ? "clashes with" : "overlap";
      report(at.path, `${show(at)} ${verb} ${show(other)} on host ${host}; ${fix(host, at, other, claims)}`);
    });
  }
};

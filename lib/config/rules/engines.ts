/** Rules over `engines`: ids, host references, GPU sharing, TP fit and shape, initial roles. */
import { andList, orList } from "../describe";
import type { PathSegment } from "../errors";
import { absent, engineName, isUnknownAlias, reportDuplicates, unknownAliasMessage, type Rule, type RuleInput } from "./context";

export const engineRules: Rule = (ctx, report) => {
  reportDuplicates(
    ctx.rawEngineIds,
    (i) => ["engines", i, "id"],
    (id, first) => `"${id}" is already the id of engines[${first}]; engine ids must be unique`,
    report,
  );

  ctx.engines.forEach((engine, i) => {
    const host = engine.value.host;
    if (host !== undefined && isUnknownAlias(ctx, host)) report(["engines", i, "host"], unknownAliasMessage(ctx, host));
  });

  sharedHostGpus(ctx, report);
  tensorParallel(ctx, report);
  roles(ctx, report);
  acceleratorsMatch(ctx, report);
};

/** Indices of engines per host alias, in engine order. */
export function enginesByHost(ctx: RuleInput): Map<string, number[]> {
  const byHost = new Map<string, number[]>();
  ctx.engines.forEach((engine, i) => {
    const host = engine.value.host;
    if (host !== undefined) byHost.set(host, [...(byHost.get(host) ?? []), i]);
  });
  return byHost;
}

/**
 * Runbook Gate A: one engine on a host takes every GPU; several engines on one host declare disjoint
 * GPU lists. Without a list an engine would take the GPUs its neighbour uses.
 */
const sharedHostGpus: Rule = (ctx, report) => {
  for (const [host, indices] of enginesByHost(ctx)) {
    if (indices.length < 2) continue;
    const names = andList(indices.map((i) => engineName(ctx, i)));
    const owner = new Map<number, number>();
    for (const i of indices) {
      const engine = ctx.engines[i];
      if (absent(engine, "gpuIds")) {
        report(
          ["engines", i, "gpuIds"],
          `missing; engines ${names} share host ${host}, so each must list its own GPUs (without gpuIds an engine takes every GPU on the host)`,
        );
        continue;
      }
      for (const gpu of engine.value.gpuIds ?? []) {
        const first = owner.get(gpu);
        if (first === undefined) owner.set(gpu, i);
        else report(["engines", i, "gpuIds"], `GPU ${gpu} is already used by engine ${engineName(ctx, first)} on host ${host}`);
      }
    }
  }
};

/**
 * The tensor-parallel size: the one configured, or one rank per GPU. The one default of an engine's TP
 * size: these rules apply it to the GPUs the config names, the launch policy (lib/launch/policy.ts) to
 * the GPUs resolved against the host.
 */
export function resolveTensorParallelSize(configured: number | undefined, gpuIds: ReadonlyArray<number>): number {
  return configured ?? Math.max(1, gpuIds.length);
}

/**
 * vLLM shards each layer over TP of the GPUs it is given: TP must divide the GPU count. The one test of
 * it, made here on the config as written (before any host is touched) and by the launch policy on the
 * GPUs resolved against the host.
 */
export function tensorParallelFits(tp: number, gpuCount: number): boolean {
  return tp <= gpuCount && gpuCount % tp === 0;
}

/** Where an engine's TP size comes from, and the path to report it at. */
function tpSource(ctx: RuleInput, i: number): { tp: number; path: PathSegment[]; own: boolean } | undefined {
  const own = ctx.engines[i].value.overrides?.tensorParallelSize;
  if (own !== undefined) return { tp: own, path: ["engines", i, "overrides", "tensorParallelSize"], own: true };
  const global = ctx.launch.value.tensorParallelSize;
  return global === undefined ? undefined : { tp: global, path: ["launch", "tensorParallelSize"], own: false };
}

const divisors = (n: number) => Array.from({ length: n }, (_, k) => k + 1).filter((d) => n % d === 0);

/**
 * TP must divide the engine's GPU count (vLLM shards each layer over TP of the GPUs it is given), and
 * all replicas need one TP shape (Gate A: matching accelerator product and TP shape).
 */
const tensorParallel: Rule = (ctx, report) => {
  const shapes: Array<{ index: number; tp: number; path: PathSegment[] }> = [];
  ctx.engines.forEach((engine, i) => {
    const gpus = engine.value.gpuIds;
    const source = tpSource(ctx, i);
    if (source && gpus && !tensorParallelFits(source.tp, gpus.length)) {
      const fix = source.own ? "" : `, or set engines[${i}].overrides.tensorParallelSize`;
      report(
        source.path,
        `tensor parallel size ${source.tp} must divide engine ${engineName(ctx, i)}'s ${gpus.length} GPU${gpus.length === 1 ? "" : "s"} ` +
          `(gpuIds [${gpus.join(", ")}]); use ${orList(divisors(gpus.length).map(String))}${fix}`,
      );
      return;
    }
    // TP is known when given, or when gpuIds fix it (the launch policy's default: every GPU the engine gets).
    if (source) shapes.push({ index: i, tp: source.tp, path: source.path });
    else if (gpus) shapes.push({ index: i, tp: resolveTensorParallelSize(undefined, gpus), path: ["engines", i, "gpuIds"] });
  });

  const reference = shapes[0];
  for (const shape of shapes.slice(1)) {
    if (reference && shape.tp !== reference.tp) {
      report(
        shape.path,
        `engine ${engineName(ctx, shape.index)} would run with tensor parallel size ${shape.tp}, but engine ` +
          `${engineName(ctx, reference.index)} runs with ${reference.tp}; all replicas need the same TP shape: ` +
          `give every engine as many GPUs and the same tensorParallelSize`,
      );
    }
  }
};

/**
 * Disaggregated serving needs a producer (prefill) and a consumer (decode) from the start. A pinned
 * engine never changes pool, so all pinned to one role can never serve.
 */
const roles: Rule = (ctx, report) => {
  if (!ctx.enginesComplete || ctx.engines.length < 2) return; // an incomplete list is reported already
  const engines = ctx.engines.map((e) => e.value);
  const count = engines.length;
  if (engines.every((e) => e.pin) && new Set(engines.map((e) => e.role)).size === 1) {
    const role = engines[0].role!;
    const other = role === "prefill" ? "decode" : "prefill";
    report(
      ["engines"],
      `all ${count} engines are pinned to ${role}; at least one engine must be able to ${other}: unpin one, or set its role to "${other}"`,
    );
    return;
  }
  const listing = engines.map((e, i) => `${engineName(ctx, i)} ${e.role}`).join(", ");
  for (const role of ["prefill", "decode"] as const) {
    if (!engines.some((e) => e.role === role)) {
      report(["engines"], `no engine starts as ${role} (${listing}); set at least one engine's role to "${role}"`);
    }
  }
};

/** Gate A: all replicas need the same accelerator product; the declared vendors must agree. */
const acceleratorsMatch: Rule = (ctx, report) => {
  let first: { alias: string; vendor: string } | undefined;
  const engineHosts = new Set(enginesByHost(ctx).keys());
  ctx.hosts.forEach((host, i) => {
    const { alias, accelerator } = host.value;
    if (alias === undefined || accelerator === undefined || !engineHosts.has(alias)) return;
    if (!first) first = { alias, vendor: accelerator };
    else if (accelerator !== first.vendor) {
      report(
        ["hosts", i, "accelerator"],
        `"${accelerator}" differs from "${first.vendor}" on host ${first.alias}; engine replicas need the same accelerator, so run engines on matching hosts`,
      );
    }
  });
};

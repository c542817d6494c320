/**
 * narwhal-profile's live sweep over a fleet.json (probe/fleet.py `run`): the selected engines, lanes by
 * shared GPU group run side by side, each engine measured by {@link Profiler}, optionally with neighbour
 * load on its group, bound to its live process identity read before and after, its decode evidence held
 * to the fleet's limits. Each completed engine's row and observations are written at once (sidecar,
 * then store); a stop writes the sidecar with what was seen and the error, then rethrows.
 */
import * as path from "node:path";
import type { EngineClient } from "./client";
import { ProfileError } from "./errors";
import { pct } from "./fit";
import { fitProblems } from "./fit-limits";
import { fleetLanes, neighboursOf, selectEngines, type FleetEngine, type ProfileFleet } from "./fleet-file";
import { emptyRecord, measuredRow, Profiler, type MeasureRecord } from "./measure";
import { metricFacts } from "./metrics";
import { NeighbourLoad, type ColocatedWorkload } from "./neighbours";
import { checkOutputs, writeFresh, writeSidecar } from "./outputs";
import { localTarget } from "./local-target";
import { publishStore } from "./publish";
import { documentBytes, identityGenerationDigest, samplesDocument, storeDocument, type ProfileRow } from "./store";
import { sweepRecord, type Sweep } from "./sweep";

export interface ClosableClient extends EngineClient {
  close(): Promise<void>;
  /** Ends connections with requests still in flight. */
  destroy(): Promise<void>;
}

export interface LiveOptions {
  fleet: ProfileFleet;
  only: readonly string[];
  overwrite: boolean;
  sweep: Sweep;
  limits?: Readonly<Record<string, number>>;
  colocated?: ColocatedWorkload;
  /** One client per engine URL (pool sized for `connections`). */
  clientFor(engine: FleetEngine, connections: number): ClosableClient;
  probeTimeoutS: number;
  requestTimeoutS: number;
  meta: Record<string, unknown>;
  log: (line: string) => void;
}

/** narwhal's `decode_evidence_problems` as messages (the shared rules in fit-limits.ts). */
export function decodeEvidenceProblems(row: ProfileRow, maxFitMape: number, maxCvMape: number): string[] {
  return fitProblems(row, { maxDecodeFitMape: maxFitMape, maxDecodeCvMape: maxCvMape }).map((p) => p.message);
}

/** The live identity narwhal binds without an engine contract: `/version` and `process_start_time_seconds`. */
async function identity(c: EngineClient, timeoutS: number, iid: string): Promise<{ version: string; start: number }> {
  const v = await c.get("/version", timeoutS);
  const version = v.status === 200 ? (JSON.parse(v.body) as { version?: unknown }).version : undefined;
  const m = await c.get("/metrics", timeoutS);
  const start = m.status === 200 ? metricFacts(m.body).processStartTime : null;
  if (typeof version !== "string" || start === null) throw new ProfileError("NARWHAL_PROFILE_GENERATION", `${iid}: engine identity unavailable (/version and process_start_time_seconds are needed to bind the profile)`);
  return { version, start };
}

export async function runLive(o: LiveOptions): Promise<{ count: number; path: string }> {
  const storePath = path.resolve(o.fleet.profilesPath);
  await checkOutputs(storePath, o.overwrite ? "live-overwrite" : "live");
  const targets = selectEngines(o.fleet.engines, o.only);
  if (o.fleet.hasContract) {
    throw new ProfileError("NARWHAL_PROFILE_GENERATION", "this fleet has an engine_contract: its profiles bind verified attestations, which the stack's Profile resources measure (pulumi up); this command binds live process identities only");
  }
  o.log(`profiling ${targets.length} instance(s) against model ${o.fleet.model}`);
  const rows: ProfileRow[] = [];
  const entries: Record<string, Record<string, unknown>> = {};
  let written = false;
  // A stop before any row leaves the sidecar alone; a later row then replaces it.
  let sidecarOnly = false;
  let stopped = false;
  const sidecarBytes = () => documentBytes(samplesDocument(entries as never, { meta: o.meta, model: o.fleet.model, sweep: sweepRecord(o.sweep) }));
  // One write at a time: lanes finish in any order.
  let writing: Promise<unknown> = Promise.resolve();
  const write = (withStore: boolean) =>
    (writing = writing.then(async () => {
      if (!withStore) {
        await writeSidecar(storePath, sidecarBytes(), !written && !sidecarOnly && !o.overwrite);
        sidecarOnly = true;
        return;
      }
      const storeBytes = documentBytes(storeDocument(rows, o.meta));
      if (!written && !sidecarOnly && !o.overwrite) await writeFresh(storePath, storeBytes, sidecarBytes());
      else await publishStore(localTarget(), storePath, storeBytes, sidecarBytes());
      written = true;
    }));
  const connections = Math.max(...o.sweep.decodeConcurrency, ...Object.values(o.limits ?? {})) + 2;

  const profileOne = async (spec: FleetEngine): Promise<void> => {
    const client = o.clientFor(spec, connections);
    const record: MeasureRecord = emptyRecord();
    const entry: Record<string, unknown> = {};
    let load: NeighbourLoad | undefined;
    const peerClients: ClosableClient[] = [];
    try {
      const limit = o.limits?.[spec.iid];
      // Health first, as narwhal does: an engine that is down is reported as such, not as a missing identity.
      await new Profiler(client, { iid: spec.iid, model: o.fleet.model, sweep: o.sweep, probeTimeoutS: o.probeTimeoutS, requestTimeoutS: o.requestTimeoutS }).health();
      if (o.colocated) {
        const peers = neighboursOf(spec, o.fleet.engines);
        load = new NeighbourLoad(
          peers.map((p) => {
            const c = o.clientFor(p, 4);
            peerClients.push(c);
            return { iid: p.iid, role: p.role, client: c };
          }),
          o.fleet.model,
          o.colocated,
          o.requestTimeoutS,
        );
        await load.start();
      }
      const before = await identity(client, o.probeTimeoutS, spec.iid);
      entry.generation_evidence = { engine: { version: before.version, process_start_time_seconds: before.start } };
      const m = await new Profiler(client, { iid: spec.iid, model: o.fleet.model, sweep: o.sweep, maxNumSeqs: limit, processStartTime: before.start, probeTimeoutS: o.probeTimeoutS, requestTimeoutS: o.requestTimeoutS, log: o.log }, record).run();
      let colocated: Partial<ProfileRow> = {};
      if (load) {
        const measured = load.stop();
        entry.colocated_load = measured;
        const group = o.fleet.engines.filter((e) => e.group === spec.group);
        colocated = {
          colocated_group: spec.group!,
          colocated_target_role: spec.role,
          colocated_prefill_engines: group.filter((e) => e.role === "prefill").length,
          colocated_decode_engines: group.filter((e) => e.role === "decode").length,
          colocated_prefill_rps: measured.prefill_rps,
          colocated_decode_rps: measured.decode_rps,
        };
      }
      const after = await identity(client, o.probeTimeoutS, spec.iid);
      if (after.start !== before.start || after.version !== before.version) throw new ProfileError("NARWHAL_PROFILE_GENERATION", `${spec.iid}: engine generation changed during profiling`);
      const row: ProfileRow = {
        ...measuredRow(spec.iid, identityGenerationDigest(before.version, before.start), m, record),
        ...colocated,
      };
      const problems = decodeEvidenceProblems(row, o.fleet.maxDecodeFitMape, o.fleet.maxDecodeCvMape);
      if (problems.length) throw new ProfileError("NARWHAL_PROFILE_FIT", `profile rejected: ${problems.join("; ")}`);
      Object.assign(entry, samplesOf(record, m.prefill.representatives, m.prefill.mape, m.blockTokens, limit), { profile: row });
      entries[spec.iid] = orderEntry(entry);
      rows.push(row);
      await write(true);
      o.log(`  ${spec.iid} fit: ttft = ${row.ttft_a.toExponential(3)}n^2 + ${row.ttft_b.toExponential(3)}n + ${row.ttft_c.toFixed(4)}`);
      o.log(`         tpot = ${row.tpot_request_slope.toExponential(3)}q + ${row.tpot_slope.toExponential(3)}b + ${row.tpot_intercept.toFixed(4)}`);
      o.log(`         decode fit MAPE ${pct(row.decode_fit_mape)}; cross-validation ${pct(row.decode_cv_mape)}`);
    } catch (err) {
      if (load) entry.colocated_load = load.abandon();
      Object.assign(entry, samplesOf(record, record.prefill_fit_points, record.prefill_fit_mape, record.prefill_block_tokens ?? null, o.limits?.[spec.iid]));
      const message = (err as Error).message;
      entry.error = `${(err as Error).name}: ${message}`;
      entries[spec.iid] = orderEntry(entry);
      await write(false).catch(() => undefined);
      if (err instanceof ProfileError && !message.startsWith(`${spec.iid}:`)) throw new ProfileError(err.code, `${spec.iid}: ${message}`);
      throw err;
    } finally {
      // Neighbour requests may still be in flight (or stalled): their connections are cut, not awaited.
      await Promise.all([client.close(), ...peerClients.map((c) => c.destroy())]);
    }
  };

  const outcomes = await Promise.allSettled(
    fleetLanes(targets, o.colocated !== undefined).map(async (lane) => {
      // A stop anywhere ends the run: no lane starts another engine after it.
      for (const spec of lane) {
        if (stopped) return;
        await profileOne(spec).catch((err: unknown) => {
          stopped = true;
          throw err;
        });
      }
    }),
  );
  await writing.catch(() => undefined);
  const failed = outcomes.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failed) throw failed.reason;
  await writing;
  o.log(`wrote ${rows.length} profile(s) to ${o.fleet.profilesPath}`);
  return { count: rows.length, path: storePath };
}

function samplesOf(r: MeasureRecord, points: unknown, mape: unknown, block: number | null, limit: number | undefined): Record<string, unknown> {
  return {
    ...(r.max_model_len !== undefined ? { max_model_len: r.max_model_len } : {}),
    ...(r.sweep ? { sweep: r.sweep } : {}),
    ...(limit !== undefined ? { max_num_seqs: limit } : {}),
    prefill: r.prefill,
    ...(points !== undefined ? { prefill_fit_points: points, prefill_fit_mape: mape } : {}),
    prefill_block_tokens: block,
    decode: r.decode,
    decode_intervals: r.decode_intervals,
    prefix_cache_hit_tokens: r.prefix_cache_hit_tokens ?? null,
  };
}

/** The sidecar entry's fields in narwhal's order (evidence first, profile or error last). */
function orderEntry(e: Record<string, unknown>): Record<string, unknown> {
  const first = ["max_model_len", "sweep", "max_num_seqs", "generation_evidence"];
  const last = ["colocated_load", "error", "profile"];
  const keys = [...first.filter((k) => k in e), ...Object.keys(e).filter((k) => !first.includes(k) && !last.includes(k)), ...last.filter((k) => k in e)];
  return Object.fromEntries(keys.map((k) => [k, e[k]]));
}

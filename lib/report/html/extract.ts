/**
 * From the chosen evidence records to what the page shows. Pure: the store was read before (collect.ts).
 * Observations are JSON of whatever shape the writing provider gave them, so every field is read with
 * a guard, and a record that lacks one shows as missing rather than breaking the page.
 */
import type { FabricVerdict } from "../../fabric/budget";
import { GATES, type GateName } from "../../preflight/types";
import type { ProfileRow } from "../../profiling/store";
import { capacityView } from "./capacity-view";
import { num, obj, str } from "./guards";
import { provenance } from "./provenance";
import type { Chosen, Selection } from "./select";
import type { FabricView, HeatCell, IdentityRow, InvalidEvidence, PreflightCell, PreflightView, ProfileView, ReportData, StoredRecord } from "./types";

const tuples = (v: unknown, width: number): Array<number[]> | null =>
  Array.isArray(v) && v.every((t) => Array.isArray(t) && t.length === width && t.every((x) => num(x) !== null)) ? (v as number[][]) : null;


const sorted = (m: ReadonlyMap<string, Chosen> | undefined): Chosen[] => [...(m ?? new Map<string, Chosen>()).entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, c]) => c);

/** A profile record's sidecar entry (`engine-samples.json`), parsed, or why it could not be. */
export type SamplesReading = { readonly entry: unknown } | { readonly problem: string };

function profileView(c: Chosen, samples: SamplesReading | undefined): ProfileView | undefined {
  const r = c.stored.record;
  const row = obj(obj(r.observations)?.row) as ProfileRow | undefined;
  if (!row) return undefined; // a stopped sweep records what it saw but has no row to draw
  const base = { engineId: r.subject.alias, provenance: provenance(c), row };
  const empty = { prefill: [], prefillFitPoints: [], prefillBlockTokens: null, decode: [] };
  if (!samples) return { ...base, ...empty, samplesProblem: "the record names no engine-samples.json artifact" };
  if ("problem" in samples) return { ...base, ...empty, samplesProblem: samples.problem };
  const e = obj(samples.entry);
  const prefill = tuples(e?.prefill, 2);
  const fit = tuples(e?.prefill_fit_points, 2);
  const decode = tuples(e?.decode, 3);
  if (!prefill || !fit || !decode) return { ...base, ...empty, samplesProblem: "engine-samples.json lacks prefill, prefill_fit_points or decode as number tuples" };
  return { ...base, prefill: prefill as Array<[number, number]>, prefillFitPoints: fit as Array<[number, number]>, prefillBlockTokens: num(e?.prefill_block_tokens), decode: decode as Array<[number, number, number]> };
}

const VERDICTS: readonly FabricVerdict[] = ["met", "below", "invalid"];

function fabricView(c: Chosen, byPath: ReadonlyMap<string, StoredRecord>): FabricView | undefined {
  const o = obj(c.stored.record.observations);
  const matrix = obj(o?.matrix);
  const hosts = Array.isArray(matrix?.hosts) ? (matrix.hosts as unknown[]).filter((h): h is string => typeof h === "string") : [];
  if (!Array.isArray(o?.edges)) return undefined;
  const cells: HeatCell[] = [];
  for (const raw of o.edges as unknown[]) {
    const e = obj(raw);
    const source = str(e?.source);
    const destination = str(e?.destination);
    const required = num(e?.requiredGbps);
    const verdict = VERDICTS.find((v) => v === e?.verdict);
    if (!source || !destination || required === null || !verdict) continue;
    const edgeRecord = byPath.get(str(obj(e?.evidence)?.relativePath) ?? "");
    const measured = str(obj(obj(edgeRecord?.record.observations)?.measurement)?.startedAt) ?? edgeRecord?.record.startedAt;
    cells.push({ source, destination, gbps: num(e?.gbps), requiredGbps: required, verdict, reason: str(e?.reason) ?? "", retransmits: num(e?.retransmits), ...(measured ? { measuredAt: measured } : {}) });
  }
  for (const cell of cells) for (const h of [cell.source, cell.destination]) if (!hosts.includes(h)) hosts.push(h);
  return { provenance: provenance(c), hosts, cells };
}

/** Who a gate line is about: a `producer -> consumer` pair, an engine, or the fleet. */
export function lineSubject(message: string, engines: ReadonlySet<string>): string {
  const pair = /^(\S+) -> (\S+?):?(?:\s|$)/.exec(message);
  if (pair && engines.has(pair[1]) && engines.has(pair[2])) return `${pair[1]} -> ${pair[2]}`;
  const one = /^(\S+?):?(?:\s|$)/.exec(message);
  if (one && engines.has(one[1])) return one[1];
  return "fleet";
}

const RANK: Record<PreflightCell["status"], number> = { skip: 0, ok: 1, fail: 2 };

function preflightView(c: Chosen): PreflightView | undefined {
  const r = c.stored.record;
  const o = obj(r.observations);
  if (!Array.isArray(o?.gates)) return undefined;
  const engineIds = Array.isArray(obj(r.inputs)?.engines) ? (r.inputs.engines as unknown[]).map((e) => str(obj(e)?.engineId)).filter((e): e is string => !!e) : [];
  const engines = new Set(engineIds);
  const cells: Record<string, Partial<Record<GateName, PreflightCell>>> = {};
  const pairs = new Set<string>();
  let fleet = false;
  const gates: GateName[] = [];
  for (const raw of o.gates as unknown[]) {
    const g = obj(raw);
    const gate = GATES.find((x) => x === g?.gate);
    if (!gate || !Array.isArray(g?.lines)) continue;
    gates.push(gate);
    for (const l of g.lines as unknown[]) {
      const line = obj(l);
      const status = (["ok", "fail", "skip"] as const).find((s) => s === line?.status);
      const message = str(line?.message);
      if (!status || message === null) continue;
      const subject = lineSubject(message, engines);
      if (subject === "fleet") fleet = true;
      else if (!engines.has(subject)) pairs.add(subject);
      const row = (cells[subject] ??= {});
      const held = row[gate];
      row[gate] = { status: held && RANK[held.status] > RANK[status] ? held.status : status, messages: [...(held?.messages ?? []), message] };
    }
  }
  const subjects = [...engineIds, ...[...pairs].sort(), ...(fleet ? ["fleet"] : [])];
  const notes = (k: string) => (Array.isArray(o?.[k]) ? (o[k] as unknown[]).map((n) => `${str(obj(n)?.gate) ?? "?"}: ${str(obj(n)?.message) ?? ""}`) : []);
  const run = typeof o?.status === "string" ? { status: o.status, skipped: notes("skipped"), warnings: notes("warnings") } : null;
  return { provenance: provenance(c), gates, subjects, cells, rounds: num(o?.rounds), run };
}

function identities(selection: Selection): IdentityRow[] {
  const ids = new Set<string>();
  for (const kind of ["generation", "attestation", "profile"]) for (const [alias, c] of selection.get(kind) ?? []) if (c.stored.record.subject.kind === "engine") ids.add(alias);
  return [...ids].sort().map((engineId) => {
    const g = selection.get("generation")?.get(engineId);
    const a = selection.get("attestation")?.get(engineId);
    const p = selection.get("profile")?.get(engineId);
    const go = obj(g?.stored.record.observations);
    const ao = obj(a?.stored.record.observations);
    return {
      engineId,
      ...(g
        ? {
            generation: {
              provenance: provenance(g),
              host: str(obj(g.stored.record.inputs.processIdentity)?.hostAlias),
              version: str(go?.version),
              generationDigest: str(go?.generationDigest),
              processStartTime: num(go?.processStartTime),
            },
          }
        : {}),
      ...(a
        ? {
            attestation: {
              provenance: provenance(a),
              attestationDigest: str(ao?.attestationDigest),
              launchDigest: str(ao?.launchDigest),
              generationDigest: str(a.stored.record.inputs.generationDigest),
            },
          }
        : {}),
      ...(p ? { profileGenerationDigest: str(p.stored.record.inputs.generationDigest) } : {}),
    };
  });
}

export interface ReportInputs {
  readonly stack: string;
  readonly generatedAt: string;
  readonly selection: Selection;
  readonly selectedBy: ReportData["selection"];
  /** Every record that read valid, by relative path (edge records are found through the matrix). */
  readonly byPath: ReadonlyMap<string, StoredRecord>;
  /** Sidecar entries by profile record path. */
  readonly samples: ReadonlyMap<string, SamplesReading>;
  readonly invalid: readonly InvalidEvidence[];
}

export function reportData(i: ReportInputs): ReportData {
  const profiles = sorted(i.selection.get("profile"))
    .map((c) => profileView(c, i.samples.get(c.stored.relativePath)))
    .filter((v): v is ProfileView => !!v);
  const matrix = sorted(i.selection.get("fabric-matrix"))[0];
  const preflight = sorted(i.selection.get("preflight"))[0];
  const fabric = matrix ? fabricView(matrix, i.byPath) : undefined;
  const gates = preflight ? preflightView(preflight) : undefined;
  const trials = sorted(i.selection.get("load-trial"));
  return {
    stack: i.stack,
    generatedAt: i.generatedAt,
    selection: i.selectedBy,
    profiles,
    ...(fabric ? { fabric } : {}),
    ...(gates ? { preflight: gates } : {}),
    identities: identities(i.selection),
    ...(trials.length ? { capacity: capacityView(trials) } : {}),
    invalid: i.invalid,
  };
}

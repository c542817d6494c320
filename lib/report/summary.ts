import { UNKNOWN } from "../unknown";
import type { PreviewEvent, StepMetadata, StepState } from "./events";
import { evidenceKind, GATE_ORDER, GATE_TITLES, type Gate } from "./kinds";
import { holdsSecret, holdsUnknown, renderValue, sameValue, SECRET_TEXT } from "./values";
import { IMPLEMENTATION, SHIM_TEXT } from "../shim-props";

/** A piece of evidence: which resource, what it is, and which host or engine it speaks for. */
export interface EvidenceRef {
  name: string;
  urn: string;
  kind: string;
  gate: Gate;
  /** `fleet` for fleet-wide evidence, `sim1` for a host, `e2 on sim2` for an engine, `sim1 → sim2` for an edge. */
  subject: string;
  host?: string;
  engine?: string;
}

/** One input that moved: `old` and `new` are printable (secrets `[secret]`, structures as digests). */
export interface InputChange {
  input: string;
  old: string;
  new: string;
  /** Set when a refresh saw it on the host rather than the program changing it, e.g. `restarted`. */
  observed?: string;
}

export interface InvalidatedEvidence extends EvidenceRef {
  op: "replace" | "update" | "create" | "delete";
  /** The provider's replace keys for a replacement; the inputs that differ for an update. */
  keys: string[];
  changes: InputChange[];
}

export interface GateGroup {
  gate: Gate;
  title: string;
  /** Re-measured: the evidence is replaced. */
  replaced: InvalidatedEvidence[];
  /** Re-judged, not re-measured: the evidence is updated in place from what it already holds. */
  updated: InvalidatedEvidence[];
  created: InvalidatedEvidence[];
  deleted: InvalidatedEvidence[];
}

/** An engine this up takes out of the router's placement, and why. */
export interface EngineOut {
  engine: string;
  why: string;
}

/**
 * Who serves while the up runs. An engine whose process starts anew (or already did) is proved again, and
 * the serving router holds it out of placement from its stop until the router is swapped onto the profile
 * store that profiles its new process, at the end of the up (docs/invalidation.md); the rest serve throughout.
 */
export interface ServingForecast {
  /** Engines out of placement until the swap, with why. */
  out: EngineOut[];
  /** Engines that keep their process and their place through the up. */
  throughout: string[];
  /** The KV wave's scope, when it restarts engines: why the whole component restarts together. */
  wave?: string;
}

export interface InvalidationSummary {
  stack: string;
  nothingInvalidated: boolean;
  counts: { replaced: number; updated: number; created: number; deleted: number; kept: number };
  gates: GateGroup[];
  kept: EvidenceRef[];
  serving: ServingForecast;
}

/** Steps the engine announces once per resource in a preview; the halves of a replacement fold into it. */
const REPLACE_PARTS = new Set(["replace", "create-replacement", "delete-replaced"]);
const LISTED = new Set(["same", "update", "create", "delete", ...REPLACE_PARTS]);

type Props = Record<string, unknown>;
const propsOf = (s: StepState | undefined, which: "inputs" | "outputs"): Props => (s?.[which] ?? {});
const nameOf = (urn: string): string => urn.split("::").pop()!;
const stringOf = (v: unknown): string | undefined => (typeof v === "string" && v !== UNKNOWN ? v : undefined);

/** Old inputs overlaid with the new ones the preview already knows: names and aliases rarely move, but may be unknown. */
function knownInputs(m: StepMetadata): Props {
  const known = Object.entries(propsOf(m.new, "inputs")).filter(([, v]) => !holdsUnknown(v));
  return { ...propsOf(m.old, "inputs"), ...Object.fromEntries(known) };
}

/** What each engine id is and where it runs, from every engine-scoped resource's inputs. */
function engineHosts(steps: StepMetadata[]): Map<string, string> {
  const hosts = new Map<string, string>();
  for (const m of steps) {
    const i = knownInputs(m);
    const id = stringOf(i.engineId);
    const host = stringOf(i.hostAlias);
    if (id && host) hosts.set(id, host);
  }
  return hosts;
}

/** The engine a generic resource belongs to, by its name (`fleet-e2-process`, `fleet-attestation-e2-sidecar`). */
function engineInName(name: string, engines: Map<string, string>): string | undefined {
  const tokens = name.split("-");
  return [...engines.keys()].filter((id) => name.includes(`-${id}-`) || name.endsWith(`-${id}`) || tokens.includes(id)).sort((a, b) => b.length - a.length)[0];
}

function describe(m: StepMetadata, engines: Map<string, string>): EvidenceRef | undefined {
  const state = m.new ?? m.old;
  const name = nameOf(m.urn);
  const kind = evidenceKind(m.type, m.urn, name, state?.custom === true);
  if (!kind) return undefined;
  const i = knownInputs(m);
  const ref: EvidenceRef = { name, urn: m.urn, ...kind, subject: "fleet" };
  const edge = i.source as { alias?: string } | undefined;
  const to = i.destination as { alias?: string } | undefined;
  if (kind.kind === "discovery" && stringOf(i.alias)) {
    ref.host = stringOf(i.alias);
    ref.subject = ref.host!;
  } else if (edge?.alias && to?.alias) {
    ref.subject = `${edge.alias} → ${to.alias}`;
  } else {
    const engine = stringOf(i.engineId) ?? engineInName(name, engines);
    if (engine) {
      ref.engine = engine;
      ref.host = stringOf(i.hostAlias) ?? engines.get(engine);
      ref.subject = ref.host ? `${engine} on ${ref.host}` : engine;
    }
  }
  return ref;
}

/**
 * What a refresh saw on the host, for the replace keys a provider raises from `read`: discovery's facets and
 * a fabric edge's paths compare `measured` with `observed`; a generation and an attestation compare their
 * digest with the one the refresh observed. Undefined for an ordinary input.
 */
function observedChange(key: string, outputs: Props): InputChange | undefined {
  const measured = outputs.measured as Props | undefined;
  const observed = outputs.observed as Props | undefined;
  if (measured && observed && key in measured && key in observed) {
    return { input: key, old: renderValue(measured[key]), new: renderValue(observed[key]), observed: "changed on the host" };
  }
  const moved: Record<string, [string, string]> = {
    generation: ["generationDigest", "observedGeneration"],
    attestation: ["attestationDigest", "observedAttestation"],
  };
  // A peer's live start moved (the proof holds a handshake of its old process); otherwise the peers'
  // identities are the ordinary input below.
  if (key === "peers" && outputs.peerStarts && outputs.observedPeerStarts) {
    const live = Object.fromEntries(Object.keys(outputs.peerStarts as Props).map((id) => [id, (outputs.observedPeerStarts as Props)[id]]));
    if (JSON.stringify(live) !== JSON.stringify(outputs.peerStarts)) return { input: key, old: renderValue(outputs.peerStarts), new: renderValue(live), observed: "a peer started anew" };
  }
  // An engine a refresh found dead, hung or gone: the probe's own words are the reason.
  if (key === "serving" && outputs.observedState === "down") {
    return { input: key, old: "serving", new: "down", observed: stringOf(outputs.observedDetail) ?? "not serving" };
  }
  const pair = moved[key];
  if (pair && pair[1] in outputs) {
    return { input: key, old: renderValue(outputs[pair[0]]), new: renderValue(outputs[pair[1]]), observed: stringOf(outputs.observedState) ?? "changed" };
  }
  return undefined;
}

function inputChange(key: string, m: StepMetadata): InputChange {
  const top = key.split(/[.[]/)[0];
  const found = observedChange(top, propsOf(m.old, "outputs"));
  if (found) return found;
  const oldInputs = propsOf(m.old, "inputs");
  const before = top in oldInputs ? oldInputs[top] : propsOf(m.old, "outputs")[top];
  const after = propsOf(m.new, "inputs")[top];
  // Two secrets that differ only in their (never shown) plaintext print alike: say so rather than "x → x".
  if (holdsSecret(before) || holdsSecret(after)) {
    const o = renderValue(before);
    const n = renderValue(after);
    return o === n ? { input: key, old: SECRET_TEXT, new: SECRET_TEXT } : { input: key, old: o, new: n };
  }
  return { input: key, old: renderValue(before), new: renderValue(after) };
}

/** Top-level inputs whose shown values differ (the dynamic provider's own code is not an input of the measurement). */
function changedInputs(m: StepMetadata): string[] {
  const o = propsOf(m.old, "inputs");
  const n = propsOf(m.new, "inputs");
  return [...new Set([...Object.keys(o), ...Object.keys(n)])]
    .filter((k) => k !== SHIM_TEXT && k !== IMPLEMENTATION)
    .filter((k) => holdsUnknown(n[k]) || !sameValue(o[k], n[k]))
    .sort();
}

/** A proof's replace keys that start its engine's process again, in words. */
const OWN_RESTART: Readonly<Record<string, string>> = {
  processIdentity: "a new process",
  planSha256: "a new launch plan",
  expectedVersion: "a new vLLM version",
  url: "a new endpoint",
  servedName: "a new served name",
};

/** Why a replaced proof means its engine is out: its own restart first, then one found, then the wave's. */
function whyOut(keys: ReadonlySet<string>): string {
  const own = [...keys].filter((k) => k !== "generation" && k !== "peers").sort();
  if (own.length) return `its process starts again (${own.map((k) => OWN_RESTART[k] ?? k).join(", ")})`;
  if (keys.has("generation")) return "its live process changed since it was proved";
  return "the KV wave restarts it: a peer started anew";
}

/** Who serves during the up, from the engines' proofs (EngineGeneration) the preview replaces. */
function servingForecast(steps: readonly StepMetadata[], byUrn: ReadonlyMap<string, { op: string; keys: Set<string>; meta: StepMetadata }>): ServingForecast {
  const out: EngineOut[] = [];
  const throughout: string[] = [];
  let wave: string | undefined;
  for (const { op, keys, meta } of byUrn.values()) {
    if (!meta.type.endsWith(":EngineGeneration")) continue;
    const engine = stringOf(knownInputs(meta).engineId);
    if (!engine || op === "create" || op === "delete") continue;
    if (op === "replace") out.push({ engine, why: whyOut(keys) });
    else throughout.push(engine);
    if (op === "replace" && keys.has("peers") && wave === undefined) {
      const waveStep = steps.find((m) => m.type.endsWith(":PeerWave") && (knownInputs(m).members as Array<{ engineId?: string }> | undefined)?.some((x) => x.engineId === engine));
      const scope = waveStep ? (knownInputs(waveStep).scope as { reason?: unknown } | undefined) : undefined;
      wave = stringOf(scope?.reason);
    }
  }
  const byEngine = (a: string, b: string) => a.localeCompare(b, undefined, { numeric: true });
  out.sort((a, b) => byEngine(a.engine, b.engine));
  throughout.sort(byEngine);
  return { out, throughout, ...(wave ? { wave } : {}) };
}

/**
 * The invalidation report of one preview from its engine events: per piece of evidence that will be
 * replaced or updated, what it is, for which host or engine and which input moved (old → new), grouped by
 * gate, and the evidence that stays. Events other than resource pre-events are ignored; a `refresh`
 * announcement is not a plan step.
 */
export function summarise(stack: string, events: readonly PreviewEvent[]): InvalidationSummary {
  const steps = events.map((e) => e.resourcePreEvent?.metadata).filter((m): m is StepMetadata => !!m && LISTED.has(m.op));
  const engines = engineHosts(steps);
  const byUrn = new Map<string, { ref: EvidenceRef; op: string; keys: Set<string>; meta: StepMetadata }>();
  for (const m of steps) {
    const ref = describe(m, engines);
    if (!ref) continue;
    const op = REPLACE_PARTS.has(m.op) ? "replace" : m.op;
    const entry = byUrn.get(m.urn) ?? { ref, op, keys: new Set<string>(), meta: m };
    // The logical `replace` step carries both states; a half may carry the keys when the other does not.
    if (m.op === "replace" || (m.old && m.new && !(entry.meta.old && entry.meta.new))) entry.meta = m;
    for (const k of m.keys ?? []) entry.keys.add(k);
    byUrn.set(m.urn, entry);
  }

  const groups = new Map<Gate, GateGroup>();
  const kept: EvidenceRef[] = [];
  for (const { ref, op, keys, meta } of byUrn.values()) {
    if (op === "same") {
      kept.push(ref);
      continue;
    }
    const keyList = op === "replace" && keys.size > 0 ? [...keys].sort() : op === "update" ? (meta.diffs?.length ? [...meta.diffs].sort() : changedInputs(meta)) : [...keys].sort();
    const item: InvalidatedEvidence = { ...ref, op: op as InvalidatedEvidence["op"], keys: keyList, changes: op === "create" || op === "delete" ? [] : keyList.map((k) => inputChange(k, meta)) };
    const group = groups.get(ref.gate) ?? { gate: ref.gate, title: GATE_TITLES[ref.gate], replaced: [], updated: [], created: [], deleted: [] };
    ({ replace: group.replaced, update: group.updated, create: group.created, delete: group.deleted })[item.op].push(item);
    groups.set(ref.gate, group);
  }

  const byName = <T extends EvidenceRef>(a: T, b: T): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  const gates = GATE_ORDER.filter((g) => groups.has(g)).map((g) => {
    const group = groups.get(g)!;
    for (const list of [group.replaced, group.updated, group.created, group.deleted]) list.sort(byName);
    return group;
  });
  kept.sort((a, b) => GATE_ORDER.indexOf(a.gate) - GATE_ORDER.indexOf(b.gate) || byName(a, b));
  const count = (f: (g: GateGroup) => unknown[]): number => gates.reduce((n, g) => n + f(g).length, 0);
  const counts = { replaced: count((g) => g.replaced), updated: count((g) => g.updated), created: count((g) => g.created), deleted: count((g) => g.deleted), kept: kept.length };
  return { stack, nothingInvalidated: counts.replaced + counts.updated + counts.created + counts.deleted === 0, counts, gates, kept, serving: servingForecast(steps, byUrn) };
}

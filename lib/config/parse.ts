/**
 * parseFleetConfig: shape, then cross-field rules, then defaults that need more than one key.
 *
 * Objects are parsed field by field (not all-or-nothing) so that one bad value does not hide the
 * problems elsewhere: a config with a bad port and two engines on the same GPU reports both.
 */
import { z } from "zod";
import { fallbackMessage, typeMessage, unknownKeyMessage } from "./describe";
import { FleetConfigError, renderPath, type PathSegment } from "./errors";
import { parseDestination } from "./formats";
import { RULES } from "./rules/all-rules";
import type { RuleInput, Section } from "./rules/context";
import { CONFIG_KEYS, SECTIONS } from "./schema/fleet-config";
import { HostSchema } from "./schema/hosts";
import { engineSchema } from "./schema/engines";
import type { FleetSpec } from "./types";

interface Problem {
  readonly path: PathSegment[];
  readonly message: string;
}

type AnyObject = z.ZodObject<z.ZodRawShape>;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The keys of the strict object at `path` inside `schema` (to suggest one for an unknown key). */
function objectKeysAt(schema: z.ZodType, path: readonly PropertyKey[]): string[] {
  const WRAPPERS = ["optional", "default", "prefault", "nullable", "readonly", "catch", "nonoptional"];
  // zod's def is typed per schema kind; walking it generically needs the loose view.
  type Def = { type: string; innerType?: Node; in?: Node; shape?: Record<string, Node>; element?: Node; valueType?: Node };
  type Node = { _zod: { def: Def } } | undefined;
  const unwrap = (node: Node): Node => {
    let n = node;
    for (;;) {
      const def = n?._zod.def;
      if (def && WRAPPERS.includes(def.type)) n = def.innerType;
      else if (def?.type === "pipe") n = def.in;
      else return n;
    }
  };
  let node = unwrap(schema);
  for (const segment of path) {
    const def = node?._zod.def;
    if (def?.type === "object") node = def.shape?.[String(segment)];
    else if (def?.type === "array") node = def.element;
    else if (def?.type === "record") node = def.valueType;
    else return [];
    node = unwrap(node);
  }
  const def = node?._zod.def;
  return def?.type === "object" ? Object.keys(def.shape ?? {}) : [];
}

/** Runs one zod schema; problems come back with paths under `prefix`, unknown keys one per key. */
function runZod(schema: z.ZodType, raw: unknown, prefix: PathSegment[], out: Problem[]): { ok: boolean; value?: unknown } {
  const result = schema.safeParse(raw, { reportInput: true, error: fallbackMessage });
  if (result.success) return { ok: true, value: result.data };
  for (const issue of result.error.issues) {
    const at = [...prefix, ...(issue.path as PathSegment[])];
    if (issue.code === "unrecognized_keys") {
      const allowed = objectKeysAt(schema, issue.path);
      for (const key of issue.keys) out.push({ path: [...at, key], message: unknownKeyMessage(key, allowed) });
    } else out.push({ path: at, message: issue.message });
  }
  return { ok: false };
}

/** Parses a strict object field by field: what parsed is kept, what failed is named. */
function parseObject<S extends AnyObject>(schema: S, raw: unknown, path: PathSegment[], out: Problem[]): Section<z.output<S>> {
  const keys = Object.keys(schema.shape);
  if (!isObject(raw)) {
    runZod(schema, raw, path, out); // words the type error
    return { value: {}, failed: new Set(keys) };
  }
  for (const key of Object.keys(raw)) {
    if (!keys.includes(key) && raw[key] !== undefined) out.push({ path: [...path, key], message: unknownKeyMessage(key, keys) });
  }
  const value: Record<string, unknown> = {};
  const failed = new Set<string>();
  for (const key of keys) {
    const field = runZod(schema.shape[key] as z.ZodType, raw[key], [...path, key], out);
    if (!field.ok) failed.add(key);
    else if (field.value !== undefined) value[key] = field.value;
  }
  return { value: value as Partial<z.output<S>>, failed };
}

const LISTS = {
  hosts: {
    min: 1,
    missing: 'missing; set it to a list of at least one host, e.g. [{alias: "gpu-a", destination: "root@10.0.0.5", fabricInterface: "eth1"}]',
    expected: "a list of hosts",
    tooFew: () => "found an empty list; the fleet needs at least one host: add {alias, destination}",
  },
  engines: {
    min: 2,
    missing: 'missing; set it to a list of at least two engines, e.g. [{id: "e1", host: "gpu-a"}, {id: "e2", host: "gpu-b"}]',
    expected: "a list of engines",
    tooFew: (n: number) =>
      `found ${n === 0 ? "an empty list" : "1 engine"}; disaggregated serving needs at least 2 (a prefill producer and a ` +
      `decode consumer): add another engine`,
  },
} as const;

const MISSING_MODEL =
  'missing; set it to {servedName, checkpointDir}, e.g. {servedName: "qwen3-8b", checkpointDir: "/srv/models/qwen3-8b"}';

/** Parses `hosts` or `engines` element by element. */
function parseList<S extends AnyObject>(
  key: keyof typeof LISTS,
  raw: unknown,
  schemaAt: (index: number) => S,
  out: Problem[],
): { items: Array<Section<z.output<S>>>; complete: boolean } {
  const rule = LISTS[key];
  if (raw === undefined) out.push({ path: [key], message: rule.missing });
  else if (!Array.isArray(raw)) out.push({ path: [key], message: typeMessage(raw, rule.expected) });
  if (!Array.isArray(raw)) return { items: [], complete: false };
  if (raw.length < rule.min) out.push({ path: [key], message: rule.tooFew(raw.length) });
  const before = out.length;
  const items = raw.map((element, i) => parseObject(schemaAt(i), element, [key, i], out));
  return { items, complete: out.length === before && raw.length >= rule.min };
}

/** A string field as written, for references that must not cascade from another field's error. */
const rawString = (element: unknown, key: string): string | undefined =>
  isObject(element) && typeof element[key] === "string" ? (element[key]) : undefined;

/** Whether the raw config has a value at `path` (a default fills in what it does not). */
function writtenAt(raw: unknown, path: readonly PathSegment[]): boolean {
  let node: unknown = raw;
  for (const segment of path) {
    if (typeof node !== "object" || node === null) return false;
    node = (node as Record<PathSegment, unknown>)[segment];
  }
  return node !== undefined;
}

/** Problems are grouped by config key (unknown keys first), then by list element; stable otherwise. */
function order(problem: Problem): [number, number] {
  const [top, second] = problem.path;
  return [CONFIG_KEYS.indexOf(String(top)), typeof second === "number" ? second : -1];
}

/**
 * Parses the plain `narwhal-fleet:*` config object into a fully defaulted `FleetSpec`.
 * @throws FleetConfigError (code `NARWHAL_CONFIG_INVALID`) listing every problem found.
 */
export function parseFleetConfig(raw: unknown): FleetSpec {
  if (!isObject(raw)) {
    throw new FleetConfigError([{ path: "(config)", message: typeMessage(raw, "an object of narwhal-fleet config keys") }]);
  }
  const problems: Problem[] = [];
  for (const key of Object.keys(raw)) {
    if (!CONFIG_KEYS.includes(key) && raw[key] !== undefined) {
      problems.push({ path: [key], message: unknownKeyMessage(key, CONFIG_KEYS) });
    }
  }

  const hosts = parseList("hosts", raw.hosts, () => HostSchema, problems);
  const engines = parseList("engines", raw.engines, engineSchema, problems);
  const section = <K extends keyof typeof SECTIONS>(key: K): Section<z.output<(typeof SECTIONS)[K]>> => {
    const schema: AnyObject = SECTIONS[key];
    if (key === "model" && raw[key] === undefined) {
      problems.push({ path: [key], message: MISSING_MODEL });
      return { value: {}, failed: new Set(Object.keys(schema.shape)) };
    }
    // Sections with every field defaulted may be left out of the stack config entirely.
    return parseObject(schema, raw[key] ?? {}, [key], problems) as Section<z.output<(typeof SECTIONS)[K]>>;
  };

  const rawHosts = Array.isArray(raw.hosts) ? raw.hosts : [];
  const rawEngines = Array.isArray(raw.engines) ? raw.engines : [];
  const input: RuleInput = {
    hosts: hosts.items,
    engines: engines.items,
    enginesComplete: engines.complete,
    rawAliases: rawHosts.map((h) => rawString(h, "alias")),
    hostsListed: Array.isArray(raw.hosts),
    rawEngineIds: rawEngines.map((e) => rawString(e, "id")),
    written: (path) => writtenAt(raw, path),
    model: section("model"),
    runtime: section("runtime"),
    launch: section("launch"),
    slo: section("slo"),
    router: section("router"),
    observability: section("observability"),
    ssh: section("ssh"),
    fabric: section("fabric"),
    profiling: section("profiling"),
    attestation: section("attestation"),
    preflight: section("preflight"),
    calibration: section("calibration"),
    trial: section("trial"),
    evidence: section("evidence"),
    rollout: section("rollout"),
  };
  for (const rule of RULES) rule(input, (path, message) => problems.push({ path, message }));

  if (problems.length > 0) {
    const sorted = problems
      .map((p, i) => ({ p, i, key: order(p) }))
      .sort((a, b) => a.key[0] - b.key[0] || a.key[1] - b.key[1] || a.i - b.i)
      .map(({ p }) => ({ path: renderPath(p.path), message: p.message }));
    throw new FleetConfigError(sorted);
  }
  return resolve(input);
}

/** Defaults that depend on other keys; only called when nothing failed, so every field is present. */
function resolve(input: RuleInput): FleetSpec {
  const full = <T>(s: Section<T>) => s.value as T;
  const fabric = full(input.fabric);
  return {
    hosts: input.hosts.map((section) => {
      const host = full(section);
      const login = parseDestination(host.destination, false);
      return {
        ...host,
        user: host.user ?? (login.ok ? login.value.user : undefined) ?? "root",
        // Present: rules.ts reported every host without one when fabric.interface is unset.
        fabricInterface: host.fabricInterface ?? fabric.interface!,
      };
    }),
    engines: input.engines.map((section, index) => ({ ...full(section), index })),
    model: full(input.model),
    runtime: full(input.runtime),
    launch: full(input.launch),
    slo: full(input.slo),
    router: full(input.router),
    observability: full(input.observability),
    ssh: full(input.ssh),
    fabric,
    profiling: full(input.profiling),
    attestation: full(input.attestation),
    preflight: full(input.preflight),
    calibration: full(input.calibration),
    trial: full(input.trial),
    evidence: full(input.evidence),
    rollout: full(input.rollout),
  };
}

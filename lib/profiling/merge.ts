/**
 * narwhal-profile `--merge`: combines separately measured stores (role mixes measured apart) into one.
 * Every source row must have matching measurement evidence in its own sidecar, every fleet engine must
 * be covered, and each engine / GPU group / role split / target-role variant must occur exactly once.
 * The merged sidecar names each source store and sidecar with its SHA-256, so those files must be kept.
 * Messages are narwhal's (probe/offline.py, store.py).
 */
import { ProfileError } from "./errors";
import { normalisedRow } from "./refit";
import { rowProblem, sha256Hex, STORE_SCHEMA, STORE_SCHEMA_VERSION, type ProfileRow } from "./store";

/** The merged sidecar's format (narwhal's). */
export const MERGE_METHOD_VERSION = 3;

export interface MergeSource {
  /** The store path as given: recorded as it is. */
  path: string;
  storeBytes: Buffer | undefined;
  samplesPath: string;
  samplesBytes: Buffer | undefined;
}

export interface Merged {
  rows: ProfileRow[];
  record: { method_version: number; sources: Array<{ profiles: string; profiles_sha256: string; samples: string; samples_sha256: string }> };
  /** Distinct measured variants merged. */
  count: number;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const stored = (msg: string) => new ProfileError("NARWHAL_PROFILE_STORE", msg);

/** Key order does not make two rows different. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (isObject(v)) return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(",")}}`;
  return JSON.stringify(v);
}

const pyRepr = (v: unknown): string => (v === undefined || v === null ? "None" : typeof v === "string" ? `'${v}'` : String(v));

/** The rows of one source store, checked as narwhal's `ProfileStore` loads them. */
function loadRows(path: string, bytes: Buffer | undefined): ProfileRow[] {
  // narwhal's loader treats a missing store as empty.
  if (bytes === undefined) return [];
  let doc: unknown;
  try {
    doc = JSON.parse(bytes.toString("utf8"));
  } catch (err) {
    throw stored(`${path}: not JSON: ${(err as Error).message}`);
  }
  if (!isObject(doc) || doc.schema !== STORE_SCHEMA || doc.schema_version !== STORE_SCHEMA_VERSION) throw stored(`${path}: not a ${STORE_SCHEMA} v${STORE_SCHEMA_VERSION} document`);
  const unknown = Object.keys(doc).filter((k) => !["schema", "schema_version", "meta", "profiles"].includes(k)).sort();
  if (unknown.length) throw stored(`unknown profile-store field(s): ${unknown.join(", ")}`);
  if (!Array.isArray(doc.profiles)) throw stored("profile store requires a profiles list");
  const seen = new Set<string>();
  return doc.profiles.map((raw, index) => {
    if (!isObject(raw)) throw stored(`${path}: profile row ${index} must be an object`);
    const row = normalisedRow(raw);
    const cached = Object.keys(row).filter((k) => k.startsWith("cached_")).sort();
    if (cached.length) throw stored(`${path}: profile ${String(row.iid)}: ${cached.join(", ")}: warm-prefix fits are not carried by this program's store`);
    const problem = rowProblem(row);
    if (problem) throw stored(`${path}: ${problem}`);
    const r = row as unknown as ProfileRow;
    const key = variant(r);
    if (seen.has(key)) throw stored(r.colocated_group === undefined ? `${path}: duplicate profile id '${r.iid}'` : `${path}: duplicate profile role mix ${key}`);
    seen.add(key);
    return r;
  });
}

/** narwhal's variant key, printed as its Python tuple. */
const variant = (r: ProfileRow): string =>
  `(${[r.iid, r.colocated_group, r.colocated_prefill_engines, r.colocated_decode_engines, r.colocated_target_role].map(pyRepr).join(", ")})`;

export function mergeStores(sources: readonly MergeSource[], engineIds: readonly string[]): Merged {
  if (sources.length < 2) throw stored("--merge needs at least two measured profile stores");
  const fleet = new Set(engineIds);
  const rows: ProfileRow[] = [];
  const seen = new Set<string>();
  const records: Merged["record"]["sources"] = [];
  for (const s of sources) {
    const sourceRows = loadRows(s.path, s.storeBytes);
    if (s.samplesBytes === undefined) throw stored(`missing source measurement sidecar: ${s.samplesPath}`);
    let record: unknown;
    try {
      record = JSON.parse(s.samplesBytes.toString("utf8"));
    } catch {
      record = undefined;
    }
    if (!isObject(record) || !isObject(record.engines)) throw stored(`invalid source measurement sidecar: ${s.samplesPath}`);
    if (!sourceRows.length) throw stored(`empty source profiles: ${s.path}`);
    for (const row of sourceRows) {
      if (!fleet.has(row.iid)) throw stored(`${s.path}: profile ${row.iid} is outside the fleet`);
      const evidence = record.engines[row.iid];
      const described = isObject(evidence) && isObject(evidence.profile) ? normalisedRow(evidence.profile) : undefined;
      if (!described || rowProblem(described) || canonical(described) !== canonical(row)) throw stored(`${s.samplesPath}: profile ${row.iid} lacks matching measurement evidence`);
      const key = variant(row);
      if (seen.has(key)) throw stored(`duplicate measured profile variant: ${key}`);
      seen.add(key);
      rows.push(row);
    }
    records.push({ profiles: s.path, profiles_sha256: sha256Hex(s.storeBytes!), samples: s.samplesPath, samples_sha256: sha256Hex(s.samplesBytes) });
  }
  const covered = new Set(rows.map((r) => r.iid));
  const missing = [...fleet].filter((id) => !covered.has(id)).sort();
  if (missing.length) throw stored(`merged profiles miss fleet engines: ${missing.join(", ")}`);
  return { rows, record: { method_version: MERGE_METHOD_VERSION, sources: records }, count: seen.size };
}

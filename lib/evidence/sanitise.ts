/**
 * Evidence leaves the private environment only through this export (runbook: "Replace private
 * addresses, paths, and credentials with stable aliases in evidence exported from the private
 * environment"). Every string and key of every record is rewritten:
 *
 * | found                                         | becomes                      |
 * |-----------------------------------------------|------------------------------|
 * | a registered secret, in any of its encodings  | `secret:redacted`            |
 * | URL passwords, Authorization values, `--api-key x`, `API_KEY=x`, string values of credential keys | `secret:redacted` |
 * | an absolute path under a given prefix         | `path:<name>/<rest>`         |
 * | a fleet host's destination, name or address   | `host:<alias>`               |
 * | another `user@host` destination               | `dest:<n>`                   |
 * | another IPv4 or IPv6 literal, also in URLs    | `addr:<n>`                   |
 * | an RDMA GID: hex (sysfs) or 16 decimal bytes (perftest's `GID:` line) | its address's alias |
 *
 * `<n>` counts distinct values in order of first appearance across the whole export, so one value has
 * one alias in every record. Numbers rather than hashes: a hash of an IPv4 address is reversed by
 * trying all 2^32 of them. Only `0.0.0.0`, `127.0.0.1`, `::` and `::1` are kept, since they name no
 * machine; every other address is private to the environment whatever its range.
 */
import { isIPv4, isIPv6 } from "node:net";
import { parseDestination } from "../config/formats";
import { EvidenceError } from "./errors";
import { renderJsonPath } from "./json-path";
import { parseEvidenceRecord, type EvidenceRecord } from "./record";
import { SecretRegistry } from "./secrets";

/** What the export replaces, built from the fleet config and the stack's secrets. */
export interface ExportAliases {
  /**
   * Host alias -> every way the private environment names that host: its SSH destination
   * (`ubuntu@10.0.0.5`, `[fd00::5]:2222`), fabric and URL addresses, hostname.
   */
  readonly hosts: Readonly<Record<string, string | readonly string[]>>;
  /** Alias -> absolute path prefix: `{run: "/srv/narwhal/runs/dev"}` turns `/srv/narwhal/runs/dev/a.json` into `path:run/a.json`. */
  readonly paths?: Readonly<Record<string, string>>;
  /** Secret values to redact (the store already refuses them; this covers records from elsewhere). */
  readonly secrets?: Iterable<string | undefined>;
}

/** What every redacted credential becomes. */
export const REDACTED = "secret:redacted";

const KEPT_ADDRESSES = new Set(["0.0.0.0", "127.0.0.1", "::", "::1"]);

/**
 * Object keys whose string values are credentials (`password`, `apiKey`, `hf_token`, `grafanaAdminPassword`),
 * but not a tokenizer's special tokens (`eos_token: "</s>"`), which are model facts.
 */
const CREDENTIAL_KEY = /(?<!(?:bos|eos|pad|unk|sep|cls|mask)[_-]?)(?:password|passwd|passphrase|secret|token|api[_-]?key|private[_-]?key|credentials?)$/i;
/** Command-line flags whose value is a credential, as one argv element or two. */
const CREDENTIAL_FLAG = "(?<![\\w-])--?(?:api[-_]?key|password|passwd|passphrase|token|secret|hf[-_]token)";
const CREDENTIAL_FLAG_ALONE = new RegExp(`^${CREDENTIAL_FLAG}$`, "i");

/** Rewrites that remove credentials from free text; each keeps the label and drops the value. */
const CREDENTIAL_TEXT: ReadonlyArray<[RegExp, string]> = [
  // scheme://user:password@host -> scheme://secret:redacted@host (a bare user@ is a destination, below)
  [/\b([a-z][a-z0-9+.-]*:\/\/)[^/\s:@]*:[^/\s@]*@/gi, `$1${REDACTED}@`],
  // An Authorization header's credential, with or without its scheme; a bare "Bearer <token>" too. Not a
  // bare "Basic x" or "Token x": those words start ordinary sentences ("Token budget exceeded").
  [/\b(Authorization:\s*(?:(?:Bearer|Basic|Token)\s+)?)[^\s"',]+/gi, `$1${REDACTED}`],
  [/\b(Bearer\s+)[A-Za-z0-9._~+/=-]{8,}/g, `$1${REDACTED}`],
  [new RegExp(`(${CREDENTIAL_FLAG}(?:=|\\s+))[^\\s"']+`, "gi"), `$1${REDACTED}`],
  [/\b([A-Za-z0-9_]*(?:API_KEY|PASSWORD|PASSWD|PASSPHRASE|TOKEN|SECRET))=[^\s"']+/gi, `$1=${REDACTED}`],
];

/** This program's revision outside a git checkout (revision.ts): `narwhal-fleet@1.0.0-rc1+tree:…` names no host. */
const TREE_REVISION = /^narwhal-fleet@[0-9A-Za-z.+-]+\+tree:[0-9a-f]{16,64}/;
const USER_AT_HOST = /(?<![\w.@+:-])([A-Za-z0-9_][A-Za-z0-9_.-]*)@(\[[0-9A-Fa-f:.]+(?:%[\w.-]+)?\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)/g;
const IPV6_BRACKETED = /\[([0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*(?:%[\w.-]+)?)\]/g;
const IPV6_BARE = /(?<![\w:.])([0-9A-Fa-f.]*:[0-9A-Fa-f.]*:[0-9A-Fa-f:.]*(?:%[\w.-]+)?)(?![\w:])/g;
const IPV4 = /(?<![\w.])(\d{1,3}(?:\.\d{1,3}){3})(?![\w]|\.\d)/g;
/** perftest prints a GID as its 16 bytes in decimal (`00:…:255:255:10:00:01:11`), an address in another spelling. */
const DECIMAL_GID = /(?<![\w:.])(\d{1,3}(?::\d{1,3}){15})(?![\w:.])/g;

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** One spelling per address (`FD00:0::5` and `fd00::5` are the same host); undefined for non-addresses. */
function canonicalAddress(text: string): string | undefined {
  if (isIPv4(text)) return text;
  if (!isIPv6(text)) return undefined;
  const [address, zone] = text.split("%", 2) as [string, string | undefined];
  const compressed = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  // An IPv4-mapped address (a RoCE GID, ::ffff:10.0.1.11) is that IPv4 address.
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(compressed);
  if (mapped && zone === undefined) {
    const [hi, lo] = [parseInt(mapped[1], 16), parseInt(mapped[2], 16)];
    return [hi >> 8, hi & 0xff, lo >> 8, lo & 0xff].join(".");
  }
  return zone === undefined ? compressed : `${compressed}%${zone}`;
}

/** The address 16 decimal bytes spell (IPv4 when IPv4-mapped); undefined when they are not bytes. */
function decimalGidAddress(text: string): string | undefined {
  const bytes = text.split(":").map(Number);
  if (bytes.some((b) => b > 255)) return undefined;
  const groups = Array.from({ length: 8 }, (_, i) => ((bytes[2 * i] << 8) | bytes[2 * i + 1]).toString(16));
  return canonicalAddress(groups.join(":"));
}

/**
 * Rewrites records for export, remembering the aliases it handed out so one value keeps one alias
 * across every record it sees. Use one instance per export.
 */
export class Sanitiser {
  private readonly secrets: SecretRegistry;
  /** canonical address -> host alias */
  private readonly hostByAddress = new Map<string, string>();
  /** lowercase host name -> host alias */
  private readonly hostByName = new Map<string, string>();
  private readonly names: RegExp | undefined;
  private readonly paths: ReadonlyArray<{ regex: RegExp; alias: string }>;
  private readonly numbered = { addr: new Map<string, string>(), dest: new Map<string, string>() };

  constructor(aliases: ExportAliases) {
    this.secrets = new SecretRegistry(aliases.secrets);
    for (const [alias, values] of Object.entries(aliases.hosts)) {
      for (const value of typeof values === "string" ? [values] : values) this.addHostName(alias, value);
    }
    const names = [...this.hostByName.keys()].sort((a, b) => b.length - a.length).map(escapeRegExp);
    this.names = names.length ? new RegExp(`(?<![A-Za-z0-9_.-])(?:${names.join("|")})(?![A-Za-z0-9_-])`, "gi") : undefined;
    this.paths = Object.entries(aliases.paths ?? {})
      .map(([alias, prefix]) => {
        const trimmed = prefix.replace(/\/+$/, "");
        if (!trimmed.startsWith("/")) throw new EvidenceError("NARWHAL_EVIDENCE_EXPORT", `path alias ${JSON.stringify(alias)}: the prefix must be an absolute path below /`);
        return { trimmed, alias };
      })
      .sort((a, b) => b.trimmed.length - a.trimmed.length) // the longest prefix wins
      .map(({ trimmed, alias }) => ({ regex: new RegExp(`(?<![\\w.~-])(?<![\\w.~-]/)${escapeRegExp(trimmed)}(?=/|$|[^\\w.-])`, "g"), alias }));
  }

  /** Registers one way the environment names a host; a value claimed by two hosts cannot be aliased. */
  private addHostName(alias: string, value: string): void {
    if (value === alias) return; // an alias hides nothing, and aliases are what the export keeps
    const parsed = parseDestination(value, true);
    const host = parsed.ok ? parsed.value.host : value;
    const address = canonicalAddress(host);
    const [map, key] = address !== undefined ? [this.hostByAddress, address] : [this.hostByName, host.toLowerCase()];
    const other = map.get(key);
    if (other !== undefined && other !== alias) {
      throw new EvidenceError("NARWHAL_EVIDENCE_EXPORT", `hosts ${other} and ${alias} share an address or name in the export alias map; each value must name one host`);
    }
    map.set(key, alias);
  }

  private number(kind: "addr" | "dest", key: string): string {
    const map = this.numbered[kind];
    let alias = map.get(key);
    if (alias === undefined) map.set(key, (alias = `${kind}:${map.size + 1}`));
    return alias;
  }

  /** An address's alias: its host when the fleet knows it, else a numbered one; undefined to keep the text as it is. */
  private address(text: string): string | undefined {
    const canonical = canonicalAddress(text);
    if (canonical === undefined || KEPT_ADDRESSES.has(canonical)) return undefined;
    const host = this.hostByAddress.get(canonical);
    return host !== undefined ? `host:${host}` : this.number("addr", canonical);
  }

  /** A destination's host part: a fleet host, or an address or a name with a letter (`pkg@1.2.3` is a version). */
  private destination(whole: string, host: string): string {
    const bare = host.startsWith("[") ? host.slice(1, -1) : host;
    const address = canonicalAddress(bare);
    const known = address !== undefined ? this.hostByAddress.get(address) : this.hostByName.get(bare.toLowerCase());
    if (known !== undefined) return `host:${known}`;
    if (address === undefined && (!/[A-Za-z]/.test(bare) || /^sha(?:256|384|512)$/i.test(bare))) return whole; // image@sha256:…
    return this.number("dest", whole.toLowerCase());
  }

  /** One string, rewritten. */
  text(input: string): string {
    let s = this.secrets.redact(input, REDACTED);
    for (const [regex, replacement] of CREDENTIAL_TEXT) s = s.replace(regex, replacement);
    for (const { regex, alias } of this.paths) s = s.replace(regex, `path:${alias}`);
    s = s.replace(USER_AT_HOST, (whole, _user: string, host: string, at: number, all: string) => (TREE_REVISION.test(all.slice(at)) ? whole : this.destination(whole, host)));
    if (this.names) s = s.replace(this.names, (name) => `host:${this.hostByName.get(name.toLowerCase())!}`);
    s = s.replace(DECIMAL_GID, (whole: string) => {
      const address = decimalGidAddress(whole);
      return address === undefined ? whole : (this.address(address) ?? whole);
    });
    s = s.replace(IPV6_BRACKETED, (whole, inner: string) => this.address(inner) ?? whole);
    s = s.replace(IPV6_BARE, (whole: string) => {
      // "fd00::5." ends a sentence: give back trailing dots and colons until an address remains.
      for (let end = whole.length; end > 1; end--) {
        if (end < whole.length && !/[.:]/.test(whole[end])) break;
        const alias = this.address(whole.slice(0, end));
        if (alias !== undefined) return alias + whole.slice(end);
      }
      return whole;
    });
    return s.replace(IPV4, (whole: string) => this.address(whole) ?? whole);
  }

  /** Any JSON value, rewritten: strings and keys; values of credential keys and argv after credential flags are redacted. */
  value(input: unknown, at: PropertyKey[] = []): unknown {
    if (typeof input === "string") return this.text(input);
    if (Array.isArray(input)) {
      return input.map((item, i) => {
        const previous: unknown = i > 0 ? input[i - 1] : undefined;
        if (typeof item === "string" && typeof previous === "string" && CREDENTIAL_FLAG_ALONE.test(previous)) return REDACTED;
        return this.value(item, [...at, i]);
      });
    }
    if (input === null || typeof input !== "object") return input;
    const out: Record<string, unknown> = {};
    for (const [key, child] of Object.entries(input)) {
      const newKey = this.text(key);
      if (Object.prototype.hasOwnProperty.call(out, newKey)) {
        throw new EvidenceError(
          "NARWHAL_EVIDENCE_EXPORT",
          `two keys of ${renderJsonPath(at)} become ${JSON.stringify(newKey)} in the export; name each host by one address in the data, or export without that key`,
        );
      }
      out[newKey] = typeof child === "string" && child !== "" && CREDENTIAL_KEY.test(key) ? REDACTED : this.value(child, [...at, key]);
    }
    return out;
  }

  /**
   * One record, rewritten, and still a valid record (checked). Only the fields that carry what was
   * measured are rewritten; kinds, times, digests and statuses are structure and stay exactly as they
   * were, so a host name that is also an ordinary word cannot break them.
   */
  record(record: EvidenceRecord): EvidenceRecord {
    const json = <T>(value: T, ...at: PropertyKey[]) => this.value(value, at) as T;
    return parseEvidenceRecord(
      {
        ...record,
        subject: { ...record.subject, alias: this.text(record.subject.alias) },
        stack: this.text(record.stack),
        inputs: json(record.inputs, "inputs"),
        ...(record.startingState === undefined ? {} : { startingState: json(record.startingState, "startingState") }),
        commands: record.commands.map((c, i) => ({
          ...c,
          host: this.text(c.host),
          ...(c.argv ? { argv: json(c.argv, "commands", i, "argv") } : {}),
          ...(c.http ? { http: { ...c.http, target: this.text(c.http.target), path: this.text(c.http.path) } } : {}),
        })),
        observations: json(record.observations, "observations"),
        verdict: { ...record.verdict, reasons: record.verdict.reasons.map((reason) => this.text(reason)) },
        artifacts: record.artifacts.map((a) => ({ ...a, name: this.text(a.name) })),
      },
      "sanitised evidence record",
    );
  }
}

/**
 * Copies of `records` fit to leave the private environment: private addresses, destinations, paths
 * under the given prefixes and credentials are replaced with stable aliases (see the table above).
 * The inputs are not changed.
 */
export function exportSanitised(records: readonly EvidenceRecord[], aliases: ExportAliases): EvidenceRecord[] {
  const sanitiser = new Sanitiser(aliases);
  return records.map((record) => sanitiser.record(record));
}

/**
 * The HTTP requests a measurement sends, kept for its record's `commands` (the runbook's "commands
 * executed" and "exit status" of a step that talks HTTP to engines). A provider runs its measurement
 * inside {@link withHttpJournal}; the engine clients note each request they send to whatever journal
 * is current (none outside a measurement, so noting costs nothing there). The journal never sees a
 * header or a request body: no credential can reach it.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { EvidenceCommand } from "./record";

/** One request as a client saw it; `status` null when no answer came (refused, reset, timed out). */
export interface HttpExchange {
  readonly method: string;
  readonly url: string;
  readonly status: number | null;
  readonly startedAt: string;
  readonly endedAt: string;
  /** The answer's text, when the client read it whole. */
  readonly body?: string;
}

/** The last answer to a GET the journal was asked to keep, as the engine gave it. */
export interface HttpCapture {
  readonly target: string;
  readonly path: string;
  readonly status: number;
  readonly body: string;
}

/** How large a kept answer may be: a /metrics page is tens of KiB; more is not an engine's answer. */
export const CAPTURE_LIMIT_BYTES = 4 * 1024 * 1024;

const METHODS = new Set(["GET", "POST", "PUT", "DELETE", "HEAD", "PATCH"]);

interface Group {
  method: string;
  target: string;
  path: string;
  statuses: Map<string, number>;
  startedAt: string;
  endedAt: string;
}

export class HttpJournal {
  private readonly groups = new Map<string, Group>();
  private readonly kept = new Map<string, HttpCapture>();
  private readonly targets: Array<[string, string]>;

  /**
   * @param targets base URL (or origin) -> the alias its answers are recorded under (`engine e0`); a URL
   *   none matches is recorded under its host, which the export replaces with an alias.
   * @param capture paths whose GET answers are kept whole (the last one each), for the step's artifacts.
   */
  constructor(
    targets: Readonly<Record<string, string>>,
    private readonly capture: ReadonlySet<string> = new Set(),
  ) {
    this.targets = Object.entries(targets)
      .map(([base, alias]): [string, string] => [originOf(base), alias])
      .filter(([origin]) => origin !== "");
  }

  /** Names the answers of `base` (a tunnel's local end, say) `alias` from now on. */
  name(base: string, alias: string): void {
    const origin = originOf(base);
    if (origin !== "") this.targets.unshift([origin, alias]);
  }

  /** Notes one request; a URL that does not parse is noted under `unknown`. */
  note(exchange: HttpExchange): void {
    let url: URL | undefined;
    try {
      url = new URL(exchange.url);
    } catch {
      url = undefined;
    }
    const target = (url && this.targets.find(([origin]) => origin === url.origin)?.[1]) ?? url?.host ?? "unknown";
    const path = (url?.pathname ?? "/").replace(/[^A-Za-z0-9._~/:-]/g, "_");
    const method = METHODS.has(exchange.method) ? exchange.method : "GET";
    const key = `${method} ${target} ${path}`;
    let group = this.groups.get(key);
    if (!group) this.groups.set(key, (group = { method, target, path, statuses: new Map(), startedAt: exchange.startedAt, endedAt: exchange.endedAt }));
    const status = exchange.status === null ? "none" : String(exchange.status);
    group.statuses.set(status, (group.statuses.get(status) ?? 0) + 1);
    if (exchange.startedAt < group.startedAt) group.startedAt = exchange.startedAt;
    if (exchange.endedAt > group.endedAt) group.endedAt = exchange.endedAt;
    if (method === "GET" && this.capture.has(path) && exchange.status !== null && exchange.body !== undefined && Buffer.byteLength(exchange.body) <= CAPTURE_LIMIT_BYTES) {
      this.kept.set(`${target} ${path}`, { target, path, status: exchange.status, body: exchange.body });
    }
  }

  /** One command per method, target and path, in the order first sent, sent from the workstation (`local`). */
  commands(): EvidenceCommand[] {
    return [...this.groups.values()].map((g) => {
      const statuses = Object.fromEntries([...g.statuses].sort(([a], [b]) => (a < b ? -1 : 1)));
      const requests = [...g.statuses.values()].reduce((a, b) => a + b, 0);
      return {
        http: { method: g.method as NonNullable<EvidenceCommand["http"]>["method"], target: g.target, path: g.path, requests },
        httpStatuses: statuses,
        host: "local",
        exitStatus: exitStatusOf(Object.keys(statuses)),
        startedAt: g.startedAt,
        endedAt: g.endedAt < g.startedAt ? g.startedAt : g.endedAt,
      };
    });
  }

  /** The kept answers, in the order their paths were first asked. */
  captures(): HttpCapture[] {
    return [...this.kept.values()];
  }
}

/** 0 when every answer was 2xx, null when one request got none, else 1: as a process's exit would say it. */
export function exitStatusOf(statuses: readonly string[]): number | null {
  if (statuses.includes("none")) return null;
  return statuses.every((s) => /^2\d\d$/.test(s)) ? 0 : 1;
}

function originOf(base: string): string {
  try {
    return new URL(base).origin;
  } catch {
    return "";
  }
}

const current = new AsyncLocalStorage<HttpJournal>();

/** Runs `fn` with `journal` noting every request the engine clients send within it. */
export function withHttpJournal<T>(journal: HttpJournal, fn: () => Promise<T>): Promise<T> {
  return current.run(journal, fn);
}

/** The journal of the measurement running now, if any. */
export function currentHttpJournal(): HttpJournal | undefined {
  return current.getStore();
}

/** Notes a request in the current journal, if any. Clients call it once per request, answered or not. */
export function noteHttp(exchange: HttpExchange): void {
  current.getStore()?.note(exchange);
}

/**
 * The peer restart wave (`runtime.restartKvPeers`): after an engine of a KV component restarts, every
 * other member restarts at once, so no engine keeps NIXL state of a process that is gone, which crashes
 * it at a later handshake below NIXL 1.5.0 (vLLM #49238). Pure: which members restarted since the wave last recorded them, and who restarts now.
 */
import { canonicalJson } from "../digest";
import type { ProcessIdentity } from "./generation";
import type { RestartScope } from "./restart-scope";

/** What the wave recorded of a member after it last ran: who owns the endpoint and when it started. */
export interface MemberRecord {
  readonly processIdentity: ProcessIdentity;
  /** `process_start_time_seconds` from the engine's `/metrics`. */
  readonly processStartTime: number;
}

export interface Restart {
  readonly engineId: string;
  /** `pid 41 -> 57 (started anew by this program)` or `process start 1700000000 -> 1700000123`. */
  readonly reason: string;
}

export function sameProcess(a: ProcessIdentity, b: ProcessIdentity): boolean {
  return a.hostAlias === b.hostAlias && a.pid === b.pid && a.containerId === b.containerId;
}

function owner(id: ProcessIdentity): string {
  return id.containerId !== undefined ? `container ${id.containerId.slice(0, 12)}` : `pid ${id.pid}`;
}

/**
 * Members that restarted since the record: the program started another process (its identity moved), or
 * the live engine started at another time (a restart by hand or by a supervisor). A member the record
 * does not know is new, not restarted; one whose start could not be observed (`null`) is left to its
 * own generation's proof, which fails loudly.
 */
export function restartedMembers(
  recorded: Readonly<Record<string, MemberRecord>>,
  current: ReadonlyArray<{ engineId: string; processIdentity: ProcessIdentity }>,
  observedStarts: Readonly<Record<string, number | null | undefined>>,
): Restart[] {
  const restarts: Restart[] = [];
  for (const m of current) {
    const was = recorded[m.engineId];
    if (!was) continue;
    if (!sameProcess(was.processIdentity, m.processIdentity)) {
      restarts.push({ engineId: m.engineId, reason: `${owner(was.processIdentity)} -> ${owner(m.processIdentity)} (started anew by this program)` });
      continue;
    }
    const seen = observedStarts[m.engineId];
    if (typeof seen === "number" && seen !== was.processStartTime) {
      restarts.push({ engineId: m.engineId, reason: `process start ${was.processStartTime} -> ${seen}` });
    }
  }
  return restarts;
}

/**
 * Who restarts in the wave: every member that did not just restart, or nobody when none did, or when the
 * component's restart scope (./restart-scope.ts) is one engine.
 */
export function waveFor(memberIds: readonly string[], restarted: readonly Restart[], scope: Pick<RestartScope, "kind"> = { kind: "component" }): string[] {
  if (restarted.length === 0 || scope.kind === "engine") return [];
  const moved = new Set(restarted.map((r) => r.engineId));
  return memberIds.filter((id) => !moved.has(id));
}

/**
 * The peers whose live start time is no longer the one recorded when a generation was proved: the
 * engine holds a handshake of their old process. Peers that could not be observed are not counted.
 */
export function movedPeers(recorded: Readonly<Record<string, number>>, observed: Readonly<Record<string, number | null>>): string[] {
  return Object.keys(recorded)
    .filter((id) => typeof observed[id] === "number" && observed[id] !== recorded[id])
    .sort();
}

type Peers = Readonly<Record<string, { readonly processIdentity: ProcessIdentity }>>;

/**
 * How a generation's proof stands to its peers: `replace` when a peer it holds a handshake of started
 * anew (its identity changed, or is not known yet because the program is starting it, or a refresh saw
 * another start), `update` when peers only joined or left, `none` otherwise.
 */
export function peerChange(
  olds: { peers?: Peers; peerStarts?: Readonly<Record<string, number>>; observedPeerStarts?: Readonly<Record<string, number | null>> },
  newPeers: Peers | undefined,
  isKnown: (v: unknown) => boolean,
): "replace" | "update" | "none" {
  if (newPeers !== undefined && !isKnown(newPeers)) return "replace";
  const was = olds.peers ?? {};
  const now = newPeers ?? {};
  for (const id of Object.keys(now)) {
    const before = was[id];
    if (!before) continue;
    if (!isKnown(now[id]) || !isKnown(now[id].processIdentity) || !sameProcess(before.processIdentity, now[id].processIdentity)) return "replace";
  }
  if (movedPeers(olds.peerStarts ?? {}, olds.observedPeerStarts ?? {}).some((id) => id in now)) return "replace";
  const ids = (p: object) => Object.keys(p).sort().join(",");
  return (olds.peers === undefined) !== (newPeers === undefined) || ids(was) !== ids(now) ? "update" : "none";
}

/** A wave's settings as its diff compares them: what changes only updates, unlike a member's recorded process. */
export interface WaveSettings {
  members: ReadonlyArray<{ processIdentity: ProcessIdentity }>;
  credentials?: unknown;
  apiKey?: string;
  restartTimeoutS: number;
  scope?: RestartScope;
}

/** Whether anything but the members' recorded processes (which the restart check reads) changed. */
export function waveSettingsChanged(olds: WaveSettings, news: WaveSettings): boolean {
  const membership = (w: WaveSettings) => canonicalJson(w.members.map(({ processIdentity: _, ...rest }) => rest));
  return (
    membership(olds) !== membership(news) ||
    canonicalJson(olds.credentials ?? null) !== canonicalJson(news.credentials ?? null) ||
    olds.apiKey !== news.apiKey ||
    olds.restartTimeoutS !== news.restartTimeoutS ||
    canonicalJson(olds.scope ?? null) !== canonicalJson(news.scope ?? null)
  );
}

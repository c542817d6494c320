/**
 * What the LoadTrial provider keeps of a point: the router host's socket and listener checks as scripts
 * and their reading, and the record's manifest, inputs, artifacts and verdict.
 */
import { sha256Json } from "../digest";
import type { ProfileRow } from "../profiling/store";
import type { EdgeSnapshot, TrialOutcome } from "./run";
import type { TrialPoint, TrialSlo } from "./types";

/** What each host shows of its sockets: the summary and the TCP states by count. */
export const SOCKETS_SCRIPT = "ss -s; echo; ss -tanH | awk '{print $1}' | sort | uniq -c";

/** The pids listening on a port, and each one's parent: the router may listen from a worker it started. */
export const listenerScript = (port: number) =>
  `for p in $(ss -ltnpH "sport = :${port}" | grep -o 'pid=[0-9]*' | cut -d= -f2 | sort -u); do echo "$p $(awk '{print $4}' /proc/$p/stat 2>/dev/null) $(tr '\\0' ' ' < /proc/$p/cmdline 2>/dev/null | cut -c1-120)"; done`;

/** Why the port's listeners are not the router's process, from listenerScript's lines; undefined when they are. */
export function listenerProblem(out: string, port: number, routerPid: number, hostAlias: string): string | undefined {
  const rows = out
    .trim()
    .split("\n")
    .filter(Boolean)
    .map((l) => {
      const [pid, ppid, ...cmd] = l.split(" ");
      return { pid: Number(pid), ppid: Number(ppid), cmd: cmd.join(" ").trim() };
    });
  if (!rows.length) return `listener conflict: nothing listens on port ${port} of ${hostAlias}, where the router ${routerPid} should`;
  const foreign = rows.filter((r) => r.pid !== routerPid && r.ppid !== routerPid);
  if (!foreign.length) return undefined;
  return `listener conflict: port ${port} of ${hostAlias} is held by ${foreign.map((r) => `pid ${r.pid} (${r.cmd || "unknown"})`).join(", ")}, not the router ${routerPid}`;
}

/** What a point is bound to, as the LoadTrial's inputs name it. */
export interface TrialBinding {
  point: TrialPoint;
  model: string;
  slo: TrialSlo;
  routerUrl: string;
  routerHost: string;
  routerPid: number;
  routerStartedAt: string;
  fleetDocumentDigest: string;
  profileStoreDigest: string;
  engines: ReadonlyArray<{ engineId: string; role: string; hostAlias: string; generationDigest: string; row: ProfileRow }>;
  requestTimeoutS: number;
  drainTimeoutS: number;
}

/** The inputs the record keeps: what the point was measured against. */
export function trialRecordInputs(i: TrialBinding) {
  const engines = i.engines.map((e) => ({ engineId: e.engineId, role: e.role, generationDigest: e.generationDigest }));
  const { point, model, slo, routerUrl, routerPid, routerStartedAt, fleetDocumentDigest, profileStoreDigest } = i;
  return { point, model, slo, routerUrl, routerPid, routerStartedAt, fleetDocumentDigest, engines, profileStoreDigest };
}

const json = (v: unknown) => JSON.stringify(v, null, 2) + "\n";
const snapshotOf = (s: EdgeSnapshot | undefined) => s ?? null;

/**
 * The record's artifacts, name and text: the manifest (what the point was bound to and how it was sent),
 * every request, the summary, the snapshots either side and the tunnel's log.
 */
export function trialArtifacts(i: TrialBinding, forwards: readonly string[] | undefined, tunnelLog: readonly string[] | undefined, outcome: TrialOutcome | undefined): Array<[string, string]> {
  const manifest = {
    point: i.point,
    model: i.model,
    slo: i.slo,
    fleetDocumentDigest: i.fleetDocumentDigest,
    router: { host: i.routerHost, pid: i.routerPid, startedAt: i.routerStartedAt },
    profileStoreDigest: i.profileStoreDigest,
    engines: i.engines.map((e) => ({ engineId: e.engineId, role: e.role, host: e.hostAlias, generationDigest: e.generationDigest, profileDigest: sha256Json(e.row) })),
    tunnel: { via: i.routerHost, forwards: forwards ?? [] },
    client: { ...(outcome?.run.settings ?? {}), requestTimeoutS: i.requestTimeoutS, drainTimeoutS: i.drainTimeoutS, window: outcome ? { start: outcome.run.start, end: outcome.run.end } : null },
  };
  return [
    ["manifest.json", json(manifest)],
    ["requests.json", json(outcome?.run.records ?? [])],
    ["summary.json", json(outcome?.observations.summary ?? null)],
    ["snapshots-before.json", json(snapshotOf(outcome?.before))],
    ["snapshots-after.json", json(snapshotOf(outcome?.after))],
    ["tunnel.log", (tunnelLog ?? ["no tunnel was opened"]).join("\n") + "\n"],
  ];
}

/** The record's verdict: a point that did not run fails with why. */
export function trialVerdict(failure: Error | undefined, outcome: TrialOutcome | undefined): { status: "pass" | "fail"; reasons: string[] } {
  const o = outcome?.observations;
  if (failure || !o) return { status: "fail", reasons: [failure?.message ?? "the point did not run"] };
  return { status: o.verdict === "pass" ? "pass" : "fail", reasons: o.reasons };
}

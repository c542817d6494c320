/**
 * Which engines restart when one engine of a KV component restarts, decided from what the fleet's own
 * evidence says of its NIXL peers (reference/vllm-restart-facts.md, narwhal's launch plan):
 *
 * - vLLM 0.29.0 gives a restarted engine a new engine id, and its readers handshake with it afresh; the old
 *   process's state stays behind in each reader as a leak, not an error.
 * - Below NIXL 1.5.0 that leak is fatal: once a reader's UCX endpoint to the gone process has timed out,
 *   its next handshake with any new engine segfaults inside loadRemoteMD (vLLM #49238). The fix,
 *   ai-dynamo/nixl #1987, is in no release up to 1.4.1 (the repository's history: not an ancestor of
 *   v1.4.0 or of release/1.4.1); 1.5.0 is the first release cut from main after it.
 * - Narwhal requires a whole-wave restart when a stopped CUDA IPC peer's GPU memory stays mapped in its
 *   readers (`peer_release`, narwhal/deployment/launch_engine/plan.py): CUDA IPC peers (`engine_ttl` in the
 *   connector's extra config) release it only with UCX_CUDA_IPC_CACHE off and a UCX version known to honour
 *   it, which this program does not read.
 *
 * So the whole component restarts together unless every member runs a NIXL with the fix and releases its
 * peers; then only the engine that restarted does.
 */
import { flagValue } from "../image-check/request";

/** The first NIXL release whose tree holds ai-dynamo/nixl #1987 (see above). */
export const NIXL_PEER_TEARDOWN_FIX = "1.5.0";

export interface RestartScope {
  /** `component`: every other member restarts with the one that did; `engine`: only that one. */
  readonly kind: "component" | "engine";
  /** Why, naming the members and versions it rests on: the preview and the wave's record show it. */
  readonly reason: string;
}

export interface ScopeMember {
  readonly engineId: string;
  /** The `nixl` (or `nixl-rocm`) distribution's version the engine's image check read; null when none was read. */
  readonly nixlVersion: string | null;
  /** The engine's launch argv, whose `--kv-transfer-config` says whether its peers are CUDA IPC peers. */
  readonly argv: ReadonlyArray<string>;
}

/** Whether `version` is at least `least`, comparing numeric release parts (`1.5.0rc1` counts as 1.5.0). */
export function versionAtLeast(version: string, least: string): boolean {
  const parts = (v: string) => (/^\d+(?:\.\d+)*/.exec(v.trim())?.[0] ?? "").split(".").filter(Boolean).map(Number);
  const a = parts(version);
  const b = parts(least);
  if (a.length === 0) return false;
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const d = (a[i] ?? 0) - (b[i] ?? 0);
    if (d !== 0) return d > 0;
  }
  return true;
}

/**
 * narwhal's `peer_release` for a launch plan: true unless its peers are CUDA IPC peers (`engine_ttl` in
 * `kv_connector_extra_config`), which release a stopped peer only under a UCX setting this program does
 * not check, so they count as not releasing.
 */
export function releasesPeers(argv: ReadonlyArray<string>): boolean {
  const text = flagValue(argv, "--kv-transfer-config");
  if (text === undefined) return true;
  try {
    const extra = (JSON.parse(text) as { kv_connector_extra_config?: Record<string, unknown> }).kv_connector_extra_config ?? {};
    return !("engine_ttl" in extra);
  } catch {
    return false;
  }
}

const names = (ids: readonly string[]) => ids.join(", ");

/** The engines whose plan does not release a stopped peer ({@link releasesPeers}). */
const holdingPeers = (plans: ReadonlyArray<{ readonly engineId: string; readonly argv: ReadonlyArray<string> }>): string[] =>
  plans.filter((p) => !releasesPeers(p.argv)).map((p) => p.engineId);

/** The scope of a restart in one KV component (its members in config order). */
export function restartScope(members: ReadonlyArray<ScopeMember>): RestartScope {
  const unfixed = members.filter((m) => m.nixlVersion === null || !versionAtLeast(m.nixlVersion, NIXL_PEER_TEARDOWN_FIX));
  if (unfixed.length) {
    const seen = [...new Set(unfixed.map((m) => m.nixlVersion ?? "unknown"))].join(", ");
    return {
      kind: "component",
      reason:
        `NIXL ${seen} on ${names(unfixed.map((m) => m.engineId))} predates ${NIXL_PEER_TEARDOWN_FIX} (ai-dynamo/nixl #1987): an engine that read KV ` +
        "from a restarted engine crashes at its next new-engine handshake once its endpoint to the old process timed out (vLLM #49238), so the whole KV component restarts together",
    };
  }
  const holding = holdingPeers(members);
  if (holding.length) {
    return {
      kind: "component",
      reason: `${names(holding)} ${holding.length === 1 ? "has" : "have"} CUDA IPC peers (engine_ttl) that keep a stopped peer's GPU memory mapped (narwhal's peer_release is false), so the whole KV component restarts together`,
    };
  }
  return {
    kind: "engine",
    reason: `every member runs NIXL ${NIXL_PEER_TEARDOWN_FIX} or later and releases a stopped peer: a restarted engine's readers handshake with its new engine id, so only that engine restarts`,
  };
}

/** narwhal's `recovery.engine_restart_policy`, and why. */
export interface RouterRestartPolicy {
  readonly policy: "individual" | "whole_wave";
  readonly reason: string;
}

/**
 * The policy the router runs under, from the fleet's launch plans, where narwhal itself asks for a whole
 * wave: an engine whose CUDA IPC peers keep a stopped peer's GPU memory mapped (`peer_release` false,
 * narwhal/backends/vllm/check.py) can be recovered only with every engine, so the router holds the whole
 * fleet once one engine is out, drains only as a wave and readmits only the complete wave. A NIXL below
 * 1.5.0 is this program's own reason for a wave (its peer wave restarts the component), not narwhal's:
 * there the router keeps serving on the engines left until the wave, since it takes no restarted engine
 * back before the swap onto the store that profiles it.
 */
export function routerRestartPolicy(plans: ReadonlyArray<{ readonly engineId: string; readonly argv: ReadonlyArray<string> }>): RouterRestartPolicy {
  const holding = holdingPeers(plans);
  if (holding.length) {
    return {
      policy: "whole_wave",
      reason: `${names(holding)} ${holding.length === 1 ? "has" : "have"} CUDA IPC peers (engine_ttl) that keep a stopped peer's GPU memory mapped (narwhal's peer_release is false): the router holds, drains and readmits the whole fleet as one wave`,
    };
  }
  return { policy: "individual", reason: "every engine releases a stopped peer (no CUDA IPC peers): the router holds out, drains and readmits one engine at a time" };
}

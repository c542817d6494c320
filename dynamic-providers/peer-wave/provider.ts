/**
 * PeerWave provider methods, loaded at call time by resource.ts (through dynamic-providers/shim.ts).
 *
 * - create: records each member's process and live start; restarts nothing;
 * - read:   observes each member's live start (observedStarts), never touching the record;
 * - diff:   an update when a member restarted since the record (the refresh saw another start, or the
 *           program started another process), or when the members, their scripts or logins changed;
 * - update: restarts every other member at once when one restarted (lib/engine/peer-wave.ts), each with
 *           its own bounded script over SSH, then records them all anew;
 * - delete: nothing remote (the engines belong to their runtime resources).
 */
import type * as pulumi from "@pulumi/pulumi";
import { restartedMembers, waveFor, waveSettingsChanged, type MemberRecord } from "../../lib/engine/peer-wave";
import { withSsh } from "../../lib/ssh/client";
import { OPERATE, sshTarget } from "../../lib/ssh/login";
import { readLogin } from "../../lib/ssh/stored-login";
import { hasUnknown } from "../../lib/unknown";
import { schemaCheck } from "../evidence-provider";
import { observeStarts } from "../engine-http";
import { peerWaveInputs, type PeerWaveInputs, type PeerWaveOutputs, type WaveMember } from "./check";

async function record(news: PeerWaveInputs): Promise<Record<string, MemberRecord>> {
  const starts = await observeStarts(news.members, news.apiKey);
  const silent = news.members.filter((m) => starts[m.engineId] === null).map((m) => `engine ${m.engineId} on host ${m.hostAlias}`);
  if (silent.length) throw new Error(`peer wave: ${silent.join(", ")} did not answer /metrics with process_start_time_seconds; check the engine and run pulumi up again`);
  return Object.fromEntries(news.members.map((m) => [m.engineId, { processIdentity: m.processIdentity, processStartTime: starts[m.engineId]! }]));
}

async function restart(m: WaveMember, news: PeerWaveInputs): Promise<void> {
  const target = sshTarget(readLogin(m.login, { alias: m.hostAlias, ...news.credentials[m.hostAlias] }), OPERATE);
  const r = await withSsh(target, (ssh) => ssh.exec("sh -s", { stdin: m.restartScript, timeoutS: news.restartTimeoutS, name: `restart engine ${m.engineId}` }));
  if (r.code !== 0) {
    throw new Error(`peer wave: restarting engine ${m.engineId} on host ${m.hostAlias} failed (exit ${r.code}): ${r.stderr.trim().split("\n").slice(-5).join(" | ")}`);
  }
}

export const provider: pulumi.dynamic.ResourceProvider = {
  check: schemaCheck<PeerWaveInputs>(peerWaveInputs),

  async create(inputs: PeerWaveInputs) {
    const outs: PeerWaveOutputs = { ...inputs, recorded: await record(inputs) };
    return { id: `wave-${inputs.members.map((m) => m.engineId).join("-")}`.slice(0, 120), outs };
  },

  async diff(_id: string, olds: PeerWaveOutputs, news: PeerWaveInputs) {
    const members = Array.isArray(news.members) ? news.members : [];
    const restarts = restartedMembers(olds.recorded ?? {}, members, olds.observedStarts ?? {});
    const changed = restarts.length > 0 || hasUnknown(news) || waveSettingsChanged(olds, { ...news, members });
    return { changes: changed, replaces: [], deleteBeforeReplace: false };
  },

  async update(_id: string, olds: PeerWaveOutputs, news: PeerWaveInputs) {
    // Judged against what runs at the moment of the wave, not what the refresh saw some time before.
    const starts = await observeStarts(news.members, news.apiKey);
    const restarted = restartedMembers(olds.recorded ?? {}, news.members, starts);
    const wave = waveFor(news.members.map((m) => m.engineId), restarted, news.scope);
    // One wave: every member stops and starts at the same time, so none re-handshakes an old process.
    const results = await Promise.allSettled(news.members.filter((m) => wave.includes(m.engineId)).map((m) => restart(m, news)));
    const failed = results.flatMap((r) => (r.status === "rejected" ? [(r.reason as Error).message] : []));
    if (failed.length) throw new Error(failed.join("\n"));
    const outs: PeerWaveOutputs = {
      ...news,
      recorded: await record(news),
      ...(restarted.length ? { lastWave: { at: new Date().toISOString(), restarted, wave, ...(news.scope ? { scope: news.scope.reason } : {}) } } : olds.lastWave ? { lastWave: olds.lastWave } : {}),
    };
    return { outs };
  },

  async read(id: string, props: PeerWaveOutputs) {
    if (!props.recorded) return { id, props };
    return { id, props: { ...props, observedStarts: await observeStarts(props.members, props.apiKey, { forRefresh: true }) } };
  },
};

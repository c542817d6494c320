/**
 * EngineGeneration provider methods, loaded at call time by resource.ts (through dynamic-providers/shim.ts).
 *
 * - check:  validates the inputs (unknown values during preview pass through);
 * - create: waits (bounded by probeTimeoutS) for `/health`, then runs the runbook's live proof: /health,
 *           /version, /v1/models, /metrics process_start_time_seconds, one 32-token temperature-0
 *           completion. Its outputs are the capture; a failed check is recorded as a `fail` record with
 *           every answer it got (../failed-attempt.ts), then rejects naming that record;
 * - read:   re-probes cheaply (/health, /metrics, /version) and records what it saw in observedGeneration,
 *           observedState and observedDetail, never touching the capture;
 * - diff:   replaces when what the proof was taken against changed, or when a refresh saw another live
 *           generation (replace key "generation") or a KV peer started anew (replace key "peers", with
 *           `runtime.restartKvPeers`); the API key, probe timeout or set of peers alone only update;
 * - update: keeps the capture (also when `adopted` alone changed: it records where the process came from); delete: nothing remote (the engine belongs to its runtime resource).
 */
import type * as pulumi from "@pulumi/pulumi";
import { observeGeneration, proveLiveProcess, waitForHealth, type ProofSubject } from "../../lib/engine/generation";
import { hasUnknown } from "../../lib/unknown";
import { heldWhileStartStands } from "../../lib/evidence/diff";
import { evidenceProvider } from "../evidence-provider";
import { providerEvidence } from "../../lib/evidence/provider-evidence";
import { GATE_C_CAPTURES, captureArtifacts } from "../http-evidence";
import { capturingAsk, keepFailedAttempt, newAttempt } from "../failed-attempt";
import { HttpJournal, withHttpJournal } from "../../lib/evidence/http-journal";
import { generationInputs } from "./schema";
import { REFRESH_TIMEOUT_S, withEngineHttp } from "../engine-http";
import type { EngineGenerationInputs, EngineGenerationOutputs } from "./schema";
import { peerChange } from "../../lib/engine/peer-wave";
import { observeStarts } from "../engine-http";

/** Inputs the proof was taken against: a change means it no longer describes the live engine. */
export const MEASURED_AGAINST = ["engineId", "url", "planSha256", "expectedVersion", "servedName", "processIdentity"] as const;
/** Inputs that only change how the engine is reached or labelled. */
export const UPDATABLE = ["apiKey", "probeTimeoutS", "hostAlias", "stack", "adopted"] as const;
/** The replace key `pulumi preview` shows when a refresh found another live process. */
export const GENERATION_MOVED = "generation";
/** The replace key when a KV peer started anew: this process holds a handshake of the old one. */
export const PEERS_MOVED = "peers";

const isKnown = (v: unknown): boolean => !hasUnknown(v);

function peerList(peers: NonNullable<EngineGenerationInputs["peers"]>) {
  return Object.entries(peers).map(([engineId, p]) => ({ engineId, hostAlias: p.processIdentity.hostAlias, ...p }));
}

/** Each peer's live start, recorded with the proof so a refresh can tell a peer restarted since. */
async function peerStartsOf(i: EngineGenerationInputs): Promise<Record<string, number> | undefined> {
  if (!i.peers) return undefined;
  const seen = await observeStarts(peerList(i.peers), i.apiKey);
  return Object.fromEntries(Object.entries(seen).filter((e): e is [string, number] => e[1] !== null));
}

function subjectOf(i: EngineGenerationInputs): ProofSubject {
  return { engineId: i.engineId, hostAlias: i.hostAlias, url: i.url, processIdentity: i.processIdentity };
}

/** Each peer whose start only runs again, with the identity it had (../diff.ts): its re-run adopts that process. */
function heldPeers(olds: EngineGenerationInputs["peers"], news: EngineGenerationInputs["peers"]): EngineGenerationInputs["peers"] {
  if (!olds || !news || typeof news !== "object") return news;
  return Object.fromEntries(Object.entries(news).map(([id, p]) => [id, olds[id] && typeof p === "object" ? heldWhileStartStands(olds[id], p, ["processIdentity"], "processStartKey") : p]));
}

export const provider: pulumi.dynamic.ResourceProvider = evidenceProvider<EngineGenerationInputs, EngineGenerationOutputs>({
  measuredAgainst: MEASURED_AGAINST,
  updatable: UPDATABLE,
  inputs: generationInputs,

  async create(inputs) {
    const s = subjectOf(inputs);
    const startedAt = new Date().toISOString();
    // Every request is journalled for the record's commands, and every answer kept: a failed proof is
    // recorded with both before it is refused.
    const attempt = newAttempt();
    const journal = new HttpJournal({ [inputs.url]: `engine ${inputs.engineId}` }, GATE_C_CAPTURES);
    const { proof, provedAt } = await withHttpJournal(journal, () =>
      withEngineHttp(s, inputs.apiKey, async (direct) => {
        const ask = capturingAsk(direct, attempt);
        await waitForHealth(ask, s, inputs.probeTimeoutS);
        const provedAt = new Date().toISOString();
        const proof = await proveLiveProcess(ask, s, { version: inputs.expectedVersion, servedName: inputs.servedName, planSha256: inputs.planSha256 });
        return { proof, provedAt };
      }),
    ).catch((err: unknown) => {
      attempt.commands.push(...journal.commands());
      return keepFailedAttempt(err, { stack: inputs.stack, secrets: [inputs.apiKey], kind: "generation", subject: { kind: "engine", alias: inputs.engineId }, inputs: Object.fromEntries(MEASURED_AGAINST.map((k) => [k, inputs[k] ?? null])) }, attempt);
    });
    const outs: EngineGenerationOutputs = {
      ...inputs,
      generationDigest: proof.generationDigest,
      processStartTime: proof.processStartTime,
      version: proof.version,
      provedAt,
      completionText: proof.completionText,
    };
    const peerStarts = await peerStartsOf(inputs);
    if (peerStarts) outs.peerStarts = peerStarts;
    if (inputs.stack) {
      const store = providerEvidence(inputs.stack, [inputs.apiKey]);
      outs.evidence = await store.record({
        kind: "generation",
        subject: { kind: "engine", alias: inputs.engineId },
        inputs: Object.fromEntries(MEASURED_AGAINST.map((k) => [k, inputs[k]])) as never,
        commands: journal.commands(),
        startedAt,
        endedAt: new Date().toISOString(),
        observations: {
          generationDigest: proof.generationDigest,
          processStartTime: proof.processStartTime,
          version: proof.version,
          completionText: proof.completionText,
          // An adopted engine was proved where it ran; its start predates this program.
          ...(inputs.adopted ? { adopted: inputs.adopted } : {}),
        },
        verdict: { status: "pass", reasons: [] },
        // The answers the proof was judged on, as the engine gave them.
        artifacts: await captureArtifacts(store, "generation", journal),
      });
    }
    return { id: `${inputs.engineId}-${proof.generationDigest.slice(7, 19)}`, outs };
  },

  // A start command that only runs again (a re-pinned host key) adopts this very process (../diff.ts).
  compared: (olds, news) => ({ olds, news: heldWhileStartStands<EngineGenerationInputs>(olds, news, ["processIdentity", "adopted"], "processStartKey") }),

  // A refresh that saw another generation, or a peer restarted, replaces; a peer added or removed updates.
  // A peer whose start only runs again is held as its own process is (`compared`).
  addition(olds, news) {
    const moved = olds.observedGeneration !== undefined && olds.observedGeneration !== olds.generationDigest;
    const peers = peerChange(olds, heldPeers(olds.peers, news.peers), isKnown);
    return { replaces: [...(moved ? [GENERATION_MOVED] : []), ...(peers === "replace" ? [PEERS_MOVED] : [])], changes: peers === "update" };
  },

  async update(olds, news) {
    // Only the API key, the probe timeout, the alias or the set of peers changed: the capture and the
    // last observation stand; the peers' starts are taken again so a later refresh compares with them.
    const { peerStarts: _, observedPeerStarts: __, ...kept } = olds;
    const peerStarts = await peerStartsOf(news);
    return { ...kept, ...news, ...(peerStarts ? { peerStarts } : {}) };
  },

  async read(id, props) {
    if (!props.generationDigest) return { id, props };
    const s = subjectOf(props);
    const timeoutS = props.probeTimeoutS > 0 ? Math.min(REFRESH_TIMEOUT_S, props.probeTimeoutS) : REFRESH_TIMEOUT_S;
    const seen = await withEngineHttp(s, props.apiKey, (ask) => observeGeneration(ask, s, props), timeoutS);
    const peers = props.peers ? { observedPeerStarts: await observeStarts(peerList(props.peers), props.apiKey, { forRefresh: true }) } : {};
    // The capture stays as it was written; only the observation fields change.
    return { id, props: { ...props, ...seen, ...peers } };
  },
});

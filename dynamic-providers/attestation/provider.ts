/**
 * Attestation provider methods, loaded at call time by resource.ts (through dynamic-providers/shim.ts).
 *
 * - check:  validates the inputs (values unknown during preview pass through);
 * - create: waits (bounded by probeTimeoutS) for the sidecar's `/health`, reads `/v1/attestation` and
 *           `/v1/process`, and checks that the answer binds the proved generation, the checked plan,
 *           the captured cache layout and the document the sidecar was started with (lib/attestation
 *           verify.ts). The answer is kept as `engine-attestation.json` in an evidence record, passed
 *           or failed; a failed check then rejects;
 * - read:   re-reads the sidecar and records what it saw in observedAttestation/State/Detail: a 503
 *           (the engine process changed) or another attestation shows in `pulumi preview --refresh`;
 * - diff:   replaces when the generation, plan, layout, document or sidecar process changed, or when a
 *           refresh saw another attestation (replace key "attestation"); alias, stack or timeout only update;
 * - delete: nothing remote (the sidecar belongs to its remote command).
 */
import type * as pulumi from "@pulumi/pulumi";
import { AttestationError } from "../../lib/attestation/errors";
import { checkAttestation, type SidecarAttestation } from "../../lib/attestation/verify";
import { clockProblem, detailOf, observedAttestation, processClockOf } from "../../lib/attestation/sidecar-answer";
import { contractFingerprint } from "../../lib/attestation/contract";
import type { EvidenceCommand } from "../../lib/evidence/record";
import { journalled } from "../http-evidence";
import { providerEvidence } from "../evidence";
import { type Ask, type ProofSubject } from "../../lib/engine/generation";
import { heldWhileStartStands } from "../diff";
import { evidenceProvider } from "../evidence-provider";
import { withEngineHttp } from "../engine-http";
import { attestationInputs, type AttestationInputs, type AttestationObservation, type AttestationOutputs, type AttestationRecord } from "./schema";

export const MEASURED_AGAINST = [
  "engineId",
  "url",
  "documentDigest",
  "generationDigest",
  "processStartTime",
  "version",
  "processIdentity",
  "planSha256",
  "cacheLayoutDigest",
  "sidecar",
] as const;
/** The document travels with its digest, which is what it is judged by. */
export const UPDATABLE = ["hostAlias", "probeTimeoutS", "stack", "document", "runbookDocument"] as const;
/** The replace key `pulumi preview` shows when a refresh found the sidecar attesting something else. */
export const ATTESTATION_MOVED = "attestation";

const ATTESTATION_PATH = "/v1/attestation";
const PROCESS_PATH = "/v1/process";
const POLL_MS = 250;

const sidecarBase = (url: string) => url.replace(/\/v1\/attestation\/?$/, "");

function subjectOf(i: AttestationInputs): ProofSubject {
  return { engineId: i.engineId, hostAlias: i.hostAlias, url: sidecarBase(i.url), processIdentity: i.processIdentity };
}

function who(i: AttestationInputs): string {
  return `engine ${i.engineId} on host ${i.hostAlias}: attestation sidecar at ${i.url}`;
}

function engineChanged(i: AttestationInputs, path: string, body: string): AttestationError {
  return new AttestationError(
    "NARWHAL_ATTESTATION_ENGINE_CHANGED",
    `${who(i)}: ${path} answered 503 (${detailOf(body)}): the engine process the sidecar bound at its start is no longer the live one. ` +
      "Refresh (pulumi up --refresh) so the engine generation is proved again; its sidecar and attestation are then replaced.",
  );
}

/** Bounded wait for `/health` 200; a 503 is final (the engine changed), anything else is retried. */
async function waitForSidecar(ask: Ask, i: AttestationInputs): Promise<void> {
  const deadline = Date.now() + i.probeTimeoutS * 1000;
  let last: string;
  for (;;) {
    try {
      const reply = await ask("/health", undefined, { timeoutS: Math.max(0.5, Math.min(5, (deadline - Date.now()) / 1000)) });
      if (reply.status === 200) return;
      if (reply.status === 503) throw engineChanged(i, "/health", reply.body);
      last = `HTTP ${reply.status}`;
    } catch (err) {
      if ((err as AttestationError).code === "NARWHAL_ATTESTATION_ENGINE_CHANGED") throw err;
      last = (err as { reason?: string }).reason ?? (err as Error).message;
    }
    if (Date.now() + POLL_MS >= deadline) break;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  throw new AttestationError(
    "NARWHAL_ATTESTATION_SIDECAR",
    `${who(i)}: /health did not answer 200 within ${i.probeTimeoutS} s (last: ${last}); nothing was recorded. ` +
      "Check the sidecar's log (sidecar.log in its folder on the host), or restart it: pulumi up --replace on its sidecar command.",
  );
}

interface Reading {
  text: string;
  checked: SidecarAttestation;
  clock: number | null;
  problems: string[];
}

async function readSidecar(i: AttestationInputs): Promise<Reading> {
  return withEngineHttp(
    subjectOf(i),
    undefined,
    async (ask) => {
      await waitForSidecar(ask, i);
      const reply = await ask(ATTESTATION_PATH);
      if (reply.status === 503) throw engineChanged(i, ATTESTATION_PATH, reply.body);
      if (reply.status !== 200) throw new AttestationError("NARWHAL_ATTESTATION_SIDECAR", `${who(i)}: ${ATTESTATION_PATH} answered HTTP ${reply.status}: ${detailOf(reply.body)}`);
      const checked = checkAttestation(reply.body, {
        document: i.document,
        documentDigest: i.documentDigest,
        generation: { generationDigest: i.generationDigest, processStartTime: i.processStartTime, version: i.version },
        planSha256: i.planSha256,
        cacheLayoutDigest: i.cacheLayoutDigest,
        launchBinding: i.runbookDocument ? "runbook" : "program",
      });
      const problems = [...checked.problems];
      const proc = await ask(PROCESS_PATH);
      const clock = processClockOf(proc.status, proc.body);
      if (clock === null) problems.push(`${PROCESS_PATH} answered HTTP ${proc.status} (${detailOf(proc.body)}), not the engine's process start: the sidecar was not started with --engine-pid or --engine-container`);
      else {
        const p = clockProblem(i.processIdentity, i.processStartTime, clock);
        if (p) problems.push(p);
      }
      return { text: reply.body, checked, clock, problems };
    },
    i.probeTimeoutS,
  );
}

async function record(i: AttestationInputs, reading: Reading, startedAt: string, commands: EvidenceCommand[] = []): Promise<{ relativePath: string; digest: string }> {
  const store = providerEvidence(i.stack!);
  const artifact = await store.artifact("attestation", "engine-attestation.json", reading.text);
  const written = await store.record({
    kind: "attestation",
    subject: { kind: "engine", alias: i.engineId },
    inputs: JSON.parse(JSON.stringify(Object.fromEntries(MEASURED_AGAINST.map((k) => [k, i[k]])))),
    commands,
    startedAt,
    endedAt: new Date().toISOString(),
    observations: JSON.parse(
      JSON.stringify({
        attestationDigest: reading.checked.attestationDigest,
        launchDigest: reading.checked.launchDigest,
        contract: reading.checked.contract,
        engine: reading.checked.engine,
        processClock: reading.clock,
        ...(i.runbookDocument ? { runbookDocument: i.runbookDocument } : {}),
      }),
    ),
    verdict: reading.problems.length ? { status: "fail", reasons: reading.problems } : { status: "pass", reasons: [] },
    artifacts: [artifact],
  });
  return { relativePath: written.relativePath, digest: written.digest };
}

/** What the sidecar answers now; never throws. */
export async function observe(props: AttestationOutputs): Promise<AttestationObservation> {
  try {
    const reply = await withEngineHttp(subjectOf(props), undefined, (ask) => ask(ATTESTATION_PATH), Math.min(props.probeTimeoutS, 30));
    return observedAttestation(ATTESTATION_PATH, reply.status, reply.body, props.attestationDigest);
  } catch (err) {
    return { observedAttestation: "none", observedState: "unreachable", observedDetail: (err as { reason?: string }).reason ?? (err as Error).message };
  }
}

export const provider: pulumi.dynamic.ResourceProvider = evidenceProvider<AttestationInputs, AttestationOutputs>({
  measuredAgainst: MEASURED_AGAINST,
  updatable: UPDATABLE,
  inputs: attestationInputs,

  async create(inputs) {
    const startedAt = new Date().toISOString();
    const read = await journalled({ [inputs.url]: `sidecar ${inputs.engineId}` }, () => readSidecar(inputs));
    const reading = read.value;
    const evidence = inputs.stack ? await record(inputs, reading, startedAt, read.journal.commands()) : undefined;
    if (reading.problems.length) {
      throw new AttestationError(
        "NARWHAL_ATTESTATION_MISMATCH",
        `${who(inputs)}: the attestation does not bind the proved engine${evidence ? ` (kept as ${evidence.relativePath})` : ""}:\n` +
          reading.problems.map((p) => `  - ${p}`).join("\n"),
      );
    }
    const contract = reading.checked.contract!;
    const result: AttestationRecord = {
      attestationDigest: reading.checked.attestationDigest!,
      launchDigest: reading.checked.launchDigest!,
      contract,
      contractFingerprint: contractFingerprint(contract),
      processClock: reading.clock!,
      attestedAt: new Date().toISOString(),
      ...(evidence ? { evidence } : {}),
    };
    return { id: `${inputs.engineId}-attestation-${result.attestationDigest.slice(7, 19)}`, outs: { ...inputs, ...result } };
  },

  // A sidecar command that only runs again (a re-pinned host key) adopts this very sidecar (../diff.ts).
  compared: (olds, news) => ({ olds, news: heldWhileStartStands<AttestationInputs>(olds, news, ["sidecar"], "sidecarStartKey") }),

  addition(olds) {
    const moved = olds.observedAttestation !== undefined && olds.observedAttestation !== olds.attestationDigest;
    return { replaces: moved ? [ATTESTATION_MOVED] : [] };
  },

  async read(id, props) {
    if (!props.attestationDigest) return { id, props };
    return { id, props: { ...props, ...(await observe(props)) } };
  },
});

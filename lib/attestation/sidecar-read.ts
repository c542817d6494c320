/**
 * One reading of an engine's attestation sidecar over the route the Attestation provider opened: a bounded
 * wait for `/health`, then `/v1/attestation` checked against what the engine was proved to be (verify.ts)
 * and `/v1/process` against the proved process start. The provider keeps the reading as evidence.
 */
import type { ServedDocument } from "./document";
import { AttestationError } from "./errors";
import { clockProblem, detailOf, processClockOf } from "./sidecar-answer";
import { checkAttestation, type SidecarAttestation } from "./verify";
import type { Ask, ProcessIdentity } from "../engine/generation";

export const ATTESTATION_PATH = "/v1/attestation";
const PROCESS_PATH = "/v1/process";
const POLL_MS = 250;

/** What a reading is checked against: the Attestation provider's inputs. */
export interface SidecarToRead {
  engineId: string;
  hostAlias: string;
  url: string;
  probeTimeoutS: number;
  document: ServedDocument;
  documentDigest: string;
  generationDigest: string;
  processStartTime: number;
  version: string;
  planSha256: string;
  cacheLayoutDigest: string;
  processIdentity: ProcessIdentity;
  runbookDocument?: unknown;
}

export interface SidecarReading {
  text: string;
  checked: SidecarAttestation;
  clock: number | null;
  problems: string[];
}

export const sidecarWho = (i: { engineId: string; hostAlias: string; url: string }) => `engine ${i.engineId} on host ${i.hostAlias}: attestation sidecar at ${i.url}`;

function engineChanged(i: SidecarToRead, path: string, body: string): AttestationError {
  return new AttestationError(
    "NARWHAL_ATTESTATION_ENGINE_CHANGED",
    `${sidecarWho(i)}: ${path} answered 503 (${detailOf(body)}): the engine process the sidecar bound at its start is no longer the live one. ` +
      "Refresh (pulumi up --refresh) so the engine generation is proved again; its sidecar and attestation are then replaced.",
  );
}

/** Bounded wait for `/health` 200; a 503 is final (the engine changed), anything else is retried. */
async function waitForSidecar(ask: Ask, i: SidecarToRead): Promise<void> {
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
    `${sidecarWho(i)}: /health did not answer 200 within ${i.probeTimeoutS} s (last: ${last}); nothing was recorded. ` +
      "Check the sidecar's log (sidecar.log in its folder on the host), or restart it: pulumi up --replace on its sidecar command.",
  );
}

/** The sidecar's answers, checked; a 503 or an answer that is no attestation rejects. */
export async function readSidecar(ask: Ask, i: SidecarToRead): Promise<SidecarReading> {
  await waitForSidecar(ask, i);
  const reply = await ask(ATTESTATION_PATH);
  if (reply.status === 503) throw engineChanged(i, ATTESTATION_PATH, reply.body);
  if (reply.status !== 200) throw new AttestationError("NARWHAL_ATTESTATION_SIDECAR", `${sidecarWho(i)}: ${ATTESTATION_PATH} answered HTTP ${reply.status}: ${detailOf(reply.body)}`);
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
}

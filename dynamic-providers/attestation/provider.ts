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
import { z } from "zod";
import { AttestationError } from "../../lib/attestation/errors";
import { checkAttestation, type SidecarAttestation } from "../../lib/attestation/verify";
import { contractFingerprint } from "../../lib/attestation/contract";
import type { EvidenceCommand } from "../../lib/evidence/record";
import { journalled } from "../http-evidence";
import { providerEvidence } from "../evidence";
import { type Ask, type ProofSubject } from "../../lib/engine/generation";
import { heldWhileStartStands } from "../diff";
import { evidenceProvider } from "../evidence-provider";
import { processIdentitySchema } from "../engine-generation/schema";
import { nonEmpty, positiveNumber, positiveSeconds, sha256Digest } from "../input-rules";
import { withEngineHttp } from "../engine-http";
import type { AttestationInputs, AttestationObservation, AttestationOutputs, AttestationRecord } from "./types";

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
/**
 * How far the sidecar's clock for the engine's pid (from /proc) may sit from the engine's own
 * `process_start_time_seconds`: equal for vLLM, whose Prometheus client reads the same /proc entry, a
 * moment apart for a runtime that stamps its start itself. A reused pid would be minutes or days off.
 */
export const PROCESS_CLOCK_TOLERANCE_S = 5;
const POLL_MS = 250;

const sidecarBase = (url: string) => url.replace(/\/v1\/attestation\/?$/, "");

function subjectOf(i: AttestationInputs): ProofSubject {
  return { engineId: i.engineId, hostAlias: i.hostAlias, url: sidecarBase(i.url), processIdentity: i.processIdentity };
}

function who(i: AttestationInputs): string {
  return `engine ${i.engineId} on host ${i.hostAlias}: attestation sidecar at ${i.url}`;
}

function detailOf(body: string): string {
  try {
    const d = (JSON.parse(body) as { detail?: unknown }).detail;
    if (typeof d === "string") return d;
  } catch {
    // not JSON: the body itself is the detail
  }
  return body.trim().slice(0, 200) || "(empty body)";
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

function clockProblem(i: AttestationInputs, clock: number): string | undefined {
  const start = i.processStartTime;
  if (i.processIdentity.containerId !== undefined) {
    // A container starts before the engine process inside it.
    return clock <= start + PROCESS_CLOCK_TOLERANCE_S ? undefined : `/v1/process says container ${i.processIdentity.containerId.slice(0, 12)} started at ${clock}, after the engine process (${start})`;
  }
  return Math.abs(clock - start) <= PROCESS_CLOCK_TOLERANCE_S
    ? undefined
    : `/v1/process says pid ${i.processIdentity.pid} started at ${clock}, the proved engine process at ${start}: the sidecar watches another process`;
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
      let clock: number | null = null;
      if (proc.status === 200) {
        let value: unknown;
        try {
          value = (JSON.parse(proc.body) as { process_start_time_seconds?: unknown }).process_start_time_seconds;
        } catch {
          value = undefined;
        }
        if (typeof value === "number" && Number.isFinite(value)) clock = value;
      }
      if (clock === null) problems.push(`${PROCESS_PATH} answered HTTP ${proc.status} (${detailOf(proc.body)}), not the engine's process start: the sidecar was not started with --engine-pid or --engine-container`);
      else {
        const p = clockProblem(i, clock);
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

/** The inputs as the check judges them, in the order their failures are reported; values unknown until apply are judged on the up. */
const inputs = z.object({
  engineId: nonEmpty("engineId"),
  hostAlias: nonEmpty("hostAlias"),
  version: nonEmpty("version"),
  documentDigest: sha256Digest("documentDigest"),
  generationDigest: sha256Digest("generationDigest"),
  planSha256: sha256Digest("planSha256"),
  cacheLayoutDigest: sha256Digest("cacheLayoutDigest"),
  url: z.unknown().refine((u) => typeof u === "string" && /^http:\/\/[^/\s]+\/v1\/attestation$/.test(u), { error: (iss) => `url must be the sidecar's http://<address>:<port>/v1/attestation, got ${JSON.stringify(iss.input)}` }),
  processIdentity: processIdentitySchema,
  probeTimeoutS: positiveSeconds("probeTimeoutS"),
  processStartTime: positiveNumber("processStartTime"),
  sidecar: z.unknown().refine((c) => Number.isInteger((c as { pid?: unknown } | undefined)?.pid) && (c as { pid: number }).pid > 0, {
    error: (iss) => `sidecar.pid must be a positive integer, got ${JSON.stringify((iss.input as { pid?: unknown } | undefined)?.pid)}`,
  }),
});

/** What the sidecar answers now; never throws. */
export async function observe(props: AttestationOutputs): Promise<AttestationObservation> {
  const none = (observedState: AttestationObservation["observedState"], observedDetail: string): AttestationObservation => ({ observedAttestation: "none", observedState, observedDetail });
  try {
    return await withEngineHttp(
      subjectOf(props),
      undefined,
      async (ask) => {
        const reply = await ask(ATTESTATION_PATH);
        if (reply.status === 503) return none("engine-changed", `${ATTESTATION_PATH} answered 503: ${detailOf(reply.body)}`);
        if (reply.status !== 200) return none("unreadable", `${ATTESTATION_PATH} answered HTTP ${reply.status}`);
        let digest: unknown;
        try {
          digest = (JSON.parse(reply.body) as { attestation_digest?: unknown }).attestation_digest;
        } catch {
          return none("unreadable", `${ATTESTATION_PATH} did not answer JSON`);
        }
        if (typeof digest !== "string") return none("unreadable", `${ATTESTATION_PATH} has no attestation_digest`);
        return digest === props.attestationDigest
          ? { observedAttestation: digest, observedState: "attested", observedDetail: "the sidecar serves the recorded attestation" }
          : { observedAttestation: digest, observedState: "changed", observedDetail: `the sidecar serves ${digest}, recorded ${props.attestationDigest}` };
      },
      Math.min(props.probeTimeoutS, 30),
    );
  } catch (err) {
    return none("unreachable", (err as { reason?: string }).reason ?? (err as Error).message);
  }
}

export const provider: pulumi.dynamic.ResourceProvider = evidenceProvider<AttestationInputs, AttestationOutputs>({
  measuredAgainst: MEASURED_AGAINST,
  updatable: UPDATABLE,
  inputs,

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

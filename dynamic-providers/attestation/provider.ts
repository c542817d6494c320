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
import { observedAttestation } from "../../lib/attestation/sidecar-answer";
import { ATTESTATION_PATH, readSidecar, sidecarWho, type SidecarReading } from "../../lib/attestation/sidecar-read";
import { contractFingerprint } from "../../lib/attestation/contract";
import type { EvidenceCommand } from "../../lib/evidence/record";
import { journalled } from "../http-evidence";
import { providerEvidence } from "../../lib/evidence/provider-evidence";
import type { ProofSubject } from "../../lib/engine/generation";
import { heldWhileStartStands } from "../../lib/evidence/diff";
import { evidenceProvider } from "../evidence-provider";
import { withEngineHttp } from "../engine-http";
import { attestationInputs, type AttestationInputs, type AttestationObservation, type AttestationOutputs, type AttestationRecord } from "./schema";

export const MEASURED_AGAINST = ["engineId", "url", "documentDigest", "generationDigest", "processStartTime", "version", "processIdentity", "planSha256", "cacheLayoutDigest", "sidecar"] as const;
/** The document travels with its digest, which is what it is judged by. */
export const UPDATABLE = ["hostAlias", "probeTimeoutS", "stack", "document", "runbookDocument"] as const;
/** The replace key `pulumi preview` shows when a refresh found the sidecar attesting something else. */
export const ATTESTATION_MOVED = "attestation";

const sidecarBase = (url: string) => url.replace(/\/v1\/attestation\/?$/, "");

function subjectOf(i: AttestationInputs): ProofSubject {
  return { engineId: i.engineId, hostAlias: i.hostAlias, url: sidecarBase(i.url), processIdentity: i.processIdentity };
}

async function record(i: AttestationInputs, reading: SidecarReading, startedAt: string, commands: EvidenceCommand[] = []): Promise<{ relativePath: string; digest: string }> {
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
    const read = await journalled({ [inputs.url]: `sidecar ${inputs.engineId}` }, () =>
      withEngineHttp(subjectOf(inputs), undefined, (ask) => readSidecar(ask, inputs), inputs.probeTimeoutS),
    );
    const reading = read.value;
    const evidence = inputs.stack ? await record(inputs, reading, startedAt, read.journal.commands()) : undefined;
    if (reading.problems.length) {
      throw new AttestationError(
        "NARWHAL_ATTESTATION_MISMATCH",
        `${sidecarWho(inputs)}: the attestation does not bind the proved engine${evidence ? ` (kept as ${evidence.relativePath})` : ""}:\n` +
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

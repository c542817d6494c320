/**
 * Shapes of the stack outputs another stack consumes through `StackReference`, built from what the
 * gates measured. Pure: index.ts feeds it resolved values.
 */
import type { GateId } from "../evidence/gates";

/** Where an evidence record is in the stack's store (`runs/<stack>/evidence/<relativePath>`) and its digest. */
export interface EvidenceRef {
  relativePath: string;
  digest: string;
}

/** One engine as a consumer sees it: what it is, where by alias, and the digests that pin its evidence. */
export interface EngineIdentityOutput {
  id: string;
  role: "prefill" | "decode";
  /** Host alias from the stack config, never an address. */
  host: string;
  /** Gate C: the live process the engine's evidence is bound to. */
  generationDigest: string;
  /** Gate E: the attestation its sidecar served for that process. */
  attestationDigest: string;
  /** Gate F: the profile the router matches to that generation. */
  profileDigest: string;
}

/** `engineIdentities` output: per engine id, its role, host alias and digests. */
export function engineIdentities(
  engines: ReadonlyArray<{ id: string; role: "prefill" | "decode"; host: string }>,
  generation: Readonly<Record<string, { generationDigest: string }>>,
  attestation: Readonly<Record<string, { attestationDigest: string }>>,
  profiles: Readonly<Record<string, { profileDigest: string }>>,
): Record<string, EngineIdentityOutput> {
  const need = <T>(map: Readonly<Record<string, T>>, id: string, what: string): T => {
    const value = map[id];
    if (value === undefined) throw new Error(`stack outputs: engine ${id} has no ${what}`);
    return value;
  };
  return Object.fromEntries(
    engines.map((e) => [
      e.id,
      {
        id: e.id,
        role: e.role,
        host: e.host,
        generationDigest: need(generation, e.id, "generation digest").generationDigest,
        attestationDigest: need(attestation, e.id, "attestation digest").attestationDigest,
        profileDigest: need(profiles, e.id, "profile digest").profileDigest,
      },
    ]),
  );
}

/** One record of the `evidence` output: what it is about (`host sim1`, `engine e1`, `edge sim1->sim2`) and where. */
export interface EvidenceOutputEntry extends EvidenceRef {
  kind: string;
  subject: string;
}

/** `evidence` output: the store's records per gate, in runbook order; gates that keep none have an empty list. */
export type EvidenceOutput = Record<GateId, EvidenceOutputEntry[]>;

/** Groups evidence references by gate; entries whose record was not written (no stack given) are left out. */
export function evidenceByGate(entries: ReadonlyArray<{ gate: GateId; kind: string; subject: string; ref: EvidenceRef | undefined }>): EvidenceOutput {
  const out: EvidenceOutput = { A: [], B: [], C: [], D: [], E: [], F: [], G: [] };
  for (const { gate, kind, subject, ref } of entries) {
    if (ref) out[gate].push({ kind, subject, relativePath: ref.relativePath, digest: ref.digest });
  }
  for (const list of Object.values(out)) list.sort((a, b) => (a.relativePath < b.relativePath ? -1 : a.relativePath > b.relativePath ? 1 : 0));
  return out;
}

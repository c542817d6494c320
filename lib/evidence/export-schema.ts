/**
 * The shape of the exported `deployment-record.json` (lib/evidence/export.ts): every step of every gate
 * carries the runbook's fields (host aliases, the revisions that apply, starting state, commands with
 * their exit status, artifacts with paths). Strict: a field missing or unknown is refused, so a check
 * against this schema fails the moment a step loses one.
 */
import { z } from "zod";
import { DIGEST_PATTERN, EvidenceHttpSchema, EvidenceVerdictSchema, HTTP_STATUS_KEY, REVISION_PATTERN } from "./record";

const digest = z.string().regex(DIGEST_PATTERN);
const revision = z.string().regex(REVISION_PATTERN);

export const ExportedCommandSchema = z
  .strictObject({
    host: z.string().min(1),
    argv: z.array(z.string()).min(1).optional(),
    scriptSha256: digest.optional(),
    http: EvidenceHttpSchema.optional(),
    httpStatuses: z.record(z.string().regex(HTTP_STATUS_KEY), z.number().int().min(1)).optional(),
    exitStatus: z.number().int().min(0).max(255).nullable(),
    signal: z.string().optional(),
  })
  .refine((c) => [c.argv, c.scriptSha256, c.http].filter((f) => f !== undefined).length === 1, { message: "a command is exactly one of argv, scriptSha256 and http" });

export const ExportedStartingStateSchema = z.discriminatedUnion("kind", [
  z.strictObject({ kind: z.literal("recorded"), value: z.json() }),
  z.strictObject({ kind: z.literal("previous-record"), record: z.strictObject({ relativePath: z.string().min(1), digest, verdict: z.enum(["pass", "fail", "invalid", "info"]), endedAt: z.string() }) }),
  z.strictObject({ kind: z.literal("nothing-before"), note: z.string().min(1) }),
]);

export const ExportedStepSchema = z.strictObject({
  kind: z.string().min(1),
  subject: z.string().regex(/^(?:host|engine|edge|fleet) \S+$/),
  hosts: z.array(z.string().min(1)),
  sourceRevision: revision,
  revisions: z.strictObject({ program: revision, narwhal: z.string().min(1).nullable() }),
  startingState: ExportedStartingStateSchema,
  commands: z.array(ExportedCommandSchema),
  artifacts: z.array(z.strictObject({ name: z.string().min(1), path: z.string().min(1), sha256: digest, bytes: z.number().int().min(0) })),
  verdict: EvidenceVerdictSchema,
  trial: z.strictObject({ point: z.string(), offeredRate: z.number().nullable(), verdict: z.string() }).optional(),
  degraded: z.array(z.string()).min(1).optional(),
  startedAt: z.string(),
  endedAt: z.string(),
  record: z.strictObject({ relativePath: z.string().min(1), digest }),
  current: z.boolean(),
});

export const ExportedGateSchema = z.strictObject({
  gate: z.enum(["A", "B", "C", "D", "E", "F", "G"]),
  title: z.string().min(1),
  status: z.enum(["pass", "degraded", "fail", "info", "not-recorded"]),
  steps: z.array(ExportedStepSchema),
});

/** `deployment-record.json` as the export writes it: the index record's place, then the per-gate index. */
export const ExportedDeploymentRecordSchema = z.strictObject({
  index: z.strictObject({ relativePath: z.string().min(1), digest }),
  stack: z.string().min(1),
  sourceRevisions: z.array(revision),
  gates: z.array(ExportedGateSchema).length(7),
  unassigned: z.array(ExportedStepSchema),
});

/** The per-gate index alone (what `deploymentRecord` returns). */
export const DeploymentRecordSchema = ExportedDeploymentRecordSchema.omit({ index: true });

/** Every field of a step, for tests that assert each is present in what was exported. */
export const STEP_FIELDS = ["kind", "subject", "hosts", "sourceRevision", "revisions", "startingState", "commands", "artifacts", "verdict", "startedAt", "endedAt", "record", "current"] as const;

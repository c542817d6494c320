/**
 * The shape of one evidence record: what was measured, on what, against which inputs, by which
 * commands, when, from which source revision, what was seen and what it means. It carries everything
 * the runbook's deployment record asks for at every gate (host alias, full source revision, starting
 * state, commands executed, exit status, generated artifacts and paths).
 */
import { z } from "zod";
import { EvidenceError } from "./errors";
import { renderJsonPath } from "./json-path";

/** The record kinds the fleet writes today, one per kind of measurement (design.md §3). */
export const EVIDENCE_KINDS = [
  "discovery",
  "launch-plan",
  "image-check",
  "generation",
  "cache-capture",
  "fabric-edge",
  "attestation",
  "profile",
  "preflight",
  "calibration",
  "router",
  "load-trial",
  "deployment-record",
] as const;

/** A known kind, or another one that follows {@link KIND_PATTERN} (new gates add kinds without a change here). */
export type EvidenceKind = (typeof EVIDENCE_KINDS)[number] | (string & {});

/**
 * A kind is also a folder name under the store root, so it is held to a shape that can never climb out
 * of the root or collide with the store's temporary files (which start with a dot).
 */
export const KIND_PATTERN = /^[a-z][a-z0-9-]{0,62}$/;

/** `sha256:<64 hex>`, the one digest form of every record, artifact and input (see lib/digest.ts). */
export const DIGEST_PATTERN = /^sha256:[0-9a-f]{64}$/;

/**
 * A full git revision (SHA-1 or SHA-256 object name), with `-dirty` when the working tree had changes.
 * Abbreviated revisions are refused: the runbook asks for the full one, and a short one can become
 * ambiguous later. Outside a git checkout it is `narwhal-fleet@<package version>+tree:<sha256 prefix>`,
 * the digest of the program's source files (revision.ts).
 */
export const REVISION_PATTERN = /^(?:(?:[0-9a-f]{40}|[0-9a-f]{64})(?:-dirty)?|narwhal-fleet@[0-9A-Za-z.+-]+\+tree:[0-9a-f]{16,64})$/;

const digest = z.string().regex(DIGEST_PATTERN, 'expected "sha256:" and 64 lowercase hex digits');
// UTC only ("...Z"), so timestamps compare as strings and read the same on every host.
const timestamp = z.iso.datetime({ message: 'expected an ISO 8601 UTC time such as "2025-01-31T12:00:00.000Z"' });
// A line of text that names something: no control characters, so it cannot forge lines in logs.
const name = (max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .regex(/^[^\p{Cc}]*$/u, "expected no control characters");

/** Ends must not come before starts; one rule for the record and for each command. */
function inOrder(value: { startedAt: string; endedAt: string }, ctx: z.RefinementCtx): void {
  if (Date.parse(value.endedAt) < Date.parse(value.startedAt)) {
    ctx.addIssue({ code: "custom", path: ["endedAt"], message: `ends (${value.endedAt}) before it starts (${value.startedAt})` });
  }
}

/** What a measurement is about. Aliases only: addresses and destinations live in the fleet config. */
export const EvidenceSubjectSchema = z.strictObject({
  kind: z.enum(["host", "engine", "edge", "fleet"]),
  /** Host or engine alias, an edge such as `sim1->sim2`, or the stack's fleet name. */
  alias: z
    .string()
    .min(1)
    .max(128)
    .regex(/^[A-Za-z0-9][A-Za-z0-9._:>-]*$/, 'expected an alias: letters, digits and "._:->"'),
});

/** `200`, `503`, ...: an HTTP status seen, or `none` for a request that got no answer (refused, timed out). */
export const HTTP_STATUS_KEY = /^(?:[1-5][0-9]{2}|none)$/;

/**
 * An HTTP request the measurement sent, with the engine or host alias it went to (never its address) and
 * the path without its query. Requests of one method, target and path are one command: `requests` counts
 * them and `httpStatuses` counts each status seen, so a profile's thousands of completions stay one line.
 */
export const EvidenceHttpSchema = z.strictObject({
  method: z.enum(["GET", "POST", "PUT", "DELETE", "HEAD", "PATCH"]),
  /** `engine e0`, `sidecar e0`, `router sim1`: who answered, by alias. */
  target: name(128),
  path: z.string().regex(/^\/[A-Za-z0-9._~/:-]*$/, 'expected a path such as "/v1/models", without a query'),
  requests: z.number().int().min(1),
});

/**
 * One command the measurement ran: its argv, the digest of the script it ran (scripts can be long, and
 * the script text itself can be stored as an artifact), or the HTTP requests it sent. An HTTP command's
 * exit status says how its requests ended, as a process's would: 0 when every one was answered 2xx, 1
 * when one was answered otherwise, null when one got no answer.
 */
export const EvidenceCommandSchema = z
  .strictObject({
    argv: z.array(z.string()).min(1).optional(),
    scriptSha256: digest.optional(),
    http: EvidenceHttpSchema.optional(),
    /** Status -> how many requests saw it; with `http` only, and summing to its `requests`. */
    httpStatuses: z.record(z.string().regex(HTTP_STATUS_KEY, 'expected an HTTP status such as "200", or "none"'), z.number().int().min(1)).optional(),
    /** Alias of the host it ran on; the management workstation is `local`. */
    host: name(128),
    /** Exit status; null when the process did not exit on its own (a signal or a timeout ended it). */
    exitStatus: z.number().int().min(0).max(255).nullable(),
    /** The signal that ended it, when one did (`SIGKILL`, ...). */
    signal: z.string().regex(/^SIG[A-Z0-9]+$/, 'expected a signal name such as "SIGTERM"').optional(),
    startedAt: timestamp,
    endedAt: timestamp,
  })
  .superRefine((command, ctx) => {
    const forms = [command.argv, command.scriptSha256, command.http].filter((f) => f !== undefined).length;
    if (forms !== 1) ctx.addIssue({ code: "custom", path: [], message: "expected exactly one of argv, scriptSha256 and http" });
    if (command.http === undefined && command.httpStatuses !== undefined) ctx.addIssue({ code: "custom", path: ["httpStatuses"], message: "httpStatuses goes with http only" });
    if (command.http !== undefined) {
      const counted = Object.values(command.httpStatuses ?? {}).reduce((a, b) => a + b, 0);
      if (counted !== command.http.requests) ctx.addIssue({ code: "custom", path: ["httpStatuses"], message: `expected the statuses of all ${command.http.requests} requests, got ${counted}` });
    }
    inOrder(command, ctx);
  });

/** What the measurement concluded. A fail or invalid verdict must say why: a bare "fail" cannot be acted on. */
export const EvidenceVerdictSchema = z
  .strictObject({
    status: z.enum(["pass", "fail", "invalid", "info"]),
    reasons: z.array(name(4096)),
  })
  .superRefine((verdict, ctx) => {
    if ((verdict.status === "fail" || verdict.status === "invalid") && verdict.reasons.length === 0) {
      ctx.addIssue({ code: "custom", path: ["reasons"], message: `a "${verdict.status}" verdict needs at least one reason` });
    }
  });

/** A raw file the measurement produced, stored beside the records by `EvidenceStore.writeArtifact`. */
export const EvidenceArtifactSchema = z.strictObject({
  /** What the file was called where it was produced (`nvidia-smi.txt`, `runs/discovery/…/env.json`). */
  name: name(1024),
  /** Path relative to the store root: `<kind>/artifacts/<hex>`. */
  relativePath: z.string().regex(/^[a-z][a-z0-9-]{0,62}\/artifacts\/[0-9a-f]{64}$/, 'expected "<kind>/artifacts/<64 hex>"'),
  sha256: digest,
  bytes: z.number().int().min(0),
});

/**
 * The record. `strictObject` everywhere: an unknown key is refused rather than silently dropped, so the
 * bytes on disk are always exactly the record the caller built. JSON values only (`z.json()`): no
 * undefined, NaN or Date, which JSON would turn into something else and break the digest round trip.
 */
export const EvidenceRecordSchema = z
  .strictObject({
    schema: z.literal("narwhal-fleet.evidence"),
    schemaVersion: z.literal(1),
    kind: z.string().regex(KIND_PATTERN, 'expected a kind such as "discovery": lowercase letters, digits and "-"'),
    subject: EvidenceSubjectSchema,
    /** Pulumi stack the measurement belongs to. */
    stack: name(256),
    /** Exactly what it was measured against: name -> digest or plain value. */
    inputs: z.record(z.string(), z.json()),
    /** What the gate looked like before the measurement changed anything (runbook: "starting state"). */
    startingState: z.json().optional(),
    commands: z.array(EvidenceCommandSchema),
    startedAt: timestamp,
    endedAt: timestamp,
    /** Revision of this program, passed in by the caller (revision.ts). */
    sourceRevision: z.string().regex(REVISION_PATTERN, 'expected a full git revision (40 or 64 hex digits, optionally -dirty) or "narwhal-fleet@<version>+tree:<hex>"'),
    /** Raw observations, as measured. */
    observations: z.json(),
    verdict: EvidenceVerdictSchema,
    artifacts: z.array(EvidenceArtifactSchema),
  })
  .superRefine(inOrder);

/** One evidence record (see {@link EvidenceRecordSchema}). */
export type EvidenceRecord = z.infer<typeof EvidenceRecordSchema>;
/** The HTTP requests of one command. */
export type EvidenceHttp = z.infer<typeof EvidenceHttpSchema>;
/** One command of a record. */
export type EvidenceCommand = z.infer<typeof EvidenceCommandSchema>;
/** One artifact of a record. */
export type EvidenceArtifact = z.infer<typeof EvidenceArtifactSchema>;
/** A record's verdict. */
export type EvidenceVerdict = z.infer<typeof EvidenceVerdictSchema>;
/** A record's subject. */
export type EvidenceSubject = z.infer<typeof EvidenceSubjectSchema>;

/**
 * Validates a record and returns it typed. Throws `NARWHAL_EVIDENCE_RECORD` listing every problem by its
 * JSON path. The messages are zod's and ours, which never quote the offending value, so a secret put in
 * the wrong field is not echoed into a log.
 */
export function parseEvidenceRecord(value: unknown, what = "evidence record"): EvidenceRecord {
  const result = EvidenceRecordSchema.safeParse(value);
  if (result.success) return result.data;
  const lines = result.error.issues.map((issue) => `  - ${renderJsonPath(issue.path)}: ${issue.message}`);
  throw new EvidenceError("NARWHAL_EVIDENCE_RECORD", `${what} does not have the record shape:\n${lines.join("\n")}`);
}

/** The fields a caller supplies; `schema` and `schemaVersion` are filled in by {@link evidenceRecord}. */
export type EvidenceRecordFields = Omit<EvidenceRecord, "schema" | "schemaVersion">;

/** Builds and validates a record of the current schema version from its fields. */
export function evidenceRecord(fields: EvidenceRecordFields): EvidenceRecord {
  return parseEvidenceRecord({ schema: "narwhal-fleet.evidence", schemaVersion: 1, ...fields });
}

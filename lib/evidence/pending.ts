/**
 * A finished measurement the evidence store refused to keep (a read-only or full folder) is kept aside in
 * `runs/<stack>/evidence-pending/` and adopted by the next create of the same resource with the same
 * inputs, which then measures nothing. The store is content-addressed, so a record kept aside has the
 * relative path and digest it will have in the store, and the outputs computed from it stay true.
 *
 * The providers' shim (dynamic-providers/shim.ts) runs every create through {@link createKeepingEvidence};
 * providerEvidence (provider-evidence.ts) asks {@link keptAside} whether its writes may go aside. Kept
 * beside the records: the create's added outputs only, never its inputs (which may hold credentials); the
 * next create has the same inputs.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { canonicalJson } from "../digest";
import { EvidenceError } from "./errors";
import { evidenceRoot } from "./store";
import { stackEvidenceStore } from "./stack-store";
import { withoutShimProps } from "../shim-props";

/** One create's writes the store refused, kept aside. */
export interface KeptAside {
  readonly stack: string;
  readonly files: string[];
  refusal?: Error;
}

const current = new AsyncLocalStorage<KeptAside>();

/** `runs/<stack>/evidence-pending`, beside the stack's store. */
export function pendingRoot(projectRoot: string, stack: string): string {
  return path.join(path.dirname(evidenceRoot(projectRoot, stack)), "evidence-pending");
}

/** The create this write belongs to, when it may keep a refused write aside. */
export function keptAside(stack: string): KeptAside | undefined {
  const kept = current.getStore();
  return kept?.stack === stack ? kept : undefined;
}

interface KeptResult {
  implementation: string;
  id: string;
  /** The outputs create added to (or changed from) its inputs. */
  added: Record<string, unknown>;
  files: string[];
}

function resultFile(root: string, implementation: string, inputs: Record<string, unknown>): string {
  const own = withoutShimProps(inputs);
  const key = createHash("sha256").update(canonicalJson({ implementation, inputs: own })).digest("hex");
  return path.join(root, "results", `${key}.json`);
}

function refusedAgain(error: unknown, root: string): Error {
  const message = error instanceof Error ? error.message : String(error);
  return new EvidenceError(
    "NARWHAL_EVIDENCE_UNWRITABLE",
    `${message}. The finished measurement is kept in ${root}; the next pulumi up adopts it into the store without measuring again`,
  );
}

/**
 * Runs one create. When an earlier create with these inputs finished but could not be stored, its files are
 * moved into the store and its result returned instead; when this one's store writes are refused, they and
 * the result are kept aside and the store's refusal is thrown, saying where they are.
 */
export async function createKeepingEvidence<R extends { id: string; outs?: Record<string, unknown> }>(
  implementation: string,
  inputs: Record<string, unknown>,
  create: () => Promise<R>,
): Promise<R> {
  const stack = inputs.stack;
  if (typeof stack !== "string") return create();
  const cwd = process.cwd();
  const root = pendingRoot(cwd, stack);
  const file = resultFile(root, implementation, inputs);
  if (fs.existsSync(file)) {
    const kept = JSON.parse(fs.readFileSync(file, "utf8")) as KeptResult;
    const store = stackEvidenceStore(stack);
    try {
      for (const relativePath of kept.files) await store.adopt(relativePath, fs.readFileSync(path.join(root, relativePath)));
    } catch (error) {
      throw (error as { code?: string }).code === "NARWHAL_EVIDENCE_UNWRITABLE" ? refusedAgain(error, root) : error;
    }
    fs.rmSync(file);
    return { id: kept.id, outs: { ...inputs, ...kept.added } } as unknown as R;
  }
  const aside: KeptAside = { stack, files: [] };
  const result = await current.run(aside, create);
  if (!aside.refusal) return result;
  const own = withoutShimProps(inputs);
  const added = Object.fromEntries(Object.entries(withoutShimProps(result.outs ?? {})).filter(([k, v]) => canonicalJson(v ?? null) !== canonicalJson(own[k] ?? null)));
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  fs.writeFileSync(file, JSON.stringify({ implementation, id: result.id, added, files: aside.files } satisfies KeptResult), { mode: 0o600 });
  throw refusedAgain(aside.refusal, root);
}

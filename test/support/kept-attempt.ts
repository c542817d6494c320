/** Reads the failed attempt's record that an error names (`the failed attempt is kept as <kind>/<hex>.json`). */
import * as fs from "node:fs";
import * as path from "node:path";
import { expect } from "chai";
import { evidenceRoot } from "../../lib/evidence/store";

/** The record and each artifact's text, from the store under `root` (the provider's working directory). */
export function keptAttempt(message: string, stack: string, root = process.cwd()): { record: Record<string, any>; artifacts: Record<string, string> } {
  const found = /the failed attempt is kept as (\S+\.json)/.exec(message);
  expect(found, `no kept attempt named in: ${message}`).to.not.equal(null);
  const store = evidenceRoot(root, stack);
  const record = JSON.parse(fs.readFileSync(path.join(store, found![1]), "utf8")) as Record<string, any>;
  const artifacts = Object.fromEntries(
    (record.artifacts as Array<{ name: string; relativePath: string }>).map((a) => [a.name, fs.readFileSync(path.join(store, a.relativePath), "utf8")]),
  );
  return { record, artifacts };
}

/**
 * Reads narwhal-check's gate report into per-gate verdicts. With `--format json` the result document
 * carries only the failed and skipped messages; the gate each line belongs to is the section header
 * printed before it (to stderr), so the text report is what names gates. The profile-generation check
 * prints under `profile`; a KV skip ("produce and consume: ...") belongs to both KV gates; a `WARN`
 * belongs to the section it is printed in (the colocated-restart risk prints under `reach`).
 */
import { GATES, verdictOf, type GateLine, type GateName, type Verdict } from "./types";

const HEADER = /^(reach|calibration|contract|profile|model|pace|tokenize|produce|consume(?: \(.*\))?|slo)$/;
const LINE = /^ {2}(ok|FAIL|SKIP|WARN) {1,4}(.*)$/;

export interface NarwhalGates {
  readonly verdicts: Readonly<Record<GateName, Verdict>>;
  readonly lines: Readonly<Record<string, readonly GateLine[]>>;
}

export function parseNarwhalReport(text: string): NarwhalGates {
  const lines: Record<string, GateLine[]> = {};
  let section = "";
  for (const raw of text.split("\n")) {
    const header = HEADER.exec(raw);
    if (header) {
      section = header[1].split(" ")[0]!;
      continue;
    }
    const m = LINE.exec(raw);
    if (!m || !section) continue;
    const line: GateLine = { status: m[1] === "ok" ? "ok" : m[1] === "FAIL" ? "fail" : m[1] === "WARN" ? "warn" : "skip", message: m[2] };
    const targets = line.message.startsWith("produce and consume:") ? ["produce", "consume"] : [section];
    for (const t of targets) (lines[t] ??= []).push(line);
  }
  const verdicts = Object.fromEntries(GATES.map((g) => [g, verdictOf(lines[g] ?? [])])) as Record<GateName, Verdict>;
  return { verdicts, lines };
}

/** Preflight gates in narwhal-check 0.7.0's cost order, and what each one concluded. */
export const GATES = ["reach", "calibration", "contract", "profile", "model", "pace", "tokenize", "produce", "consume", "slo"] as const;
export type GateName = (typeof GATES)[number];

/**
 * A gate fails on any failed line, passes on any passing line, and is skipped when it only skipped. A
 * warning (narwhal-check's `WARN`: a configuration risk) changes no outcome, so a gate that only warned
 * passed.
 */
export type Verdict = "pass" | "fail" | "skip";

export interface GateLine {
  readonly status: "ok" | "fail" | "skip" | "warn";
  readonly message: string;
}

export interface GateResult {
  readonly gate: GateName;
  readonly verdict: Verdict;
  readonly lines: readonly GateLine[];
}

export function verdictOf(lines: readonly GateLine[]): Verdict {
  if (lines.some((l) => l.status === "fail")) return "fail";
  if (lines.some((l) => l.status === "ok")) return "pass";
  if (lines.some((l) => l.status === "skip")) return "skip";
  return lines.length ? "pass" : "skip";
}

/** Collects lines per gate in the order they are reported. */
export class Report {
  private readonly byGate = new Map<GateName, GateLine[]>();

  private add(gate: GateName, status: GateLine["status"], message: string): void {
    const lines = this.byGate.get(gate) ?? [];
    lines.push({ status, message });
    this.byGate.set(gate, lines);
  }
  ok(gate: GateName, message: string): void {
    this.add(gate, "ok", message);
  }
  fail(gate: GateName, message: string): void {
    this.add(gate, "fail", message);
  }
  skip(gate: GateName, message: string): void {
    this.add(gate, "skip", message);
  }
  warn(gate: GateName, message: string): void {
    this.add(gate, "warn", message);
  }
  results(): GateResult[] {
    return GATES.map((gate) => {
      const lines = this.byGate.get(gate) ?? [];
      return { gate, verdict: verdictOf(lines), lines };
    });
  }
}

/** What the router starts behind: every gate that ran passed or was skipped for a permitted reason. */
export function failedGates(results: readonly GateResult[]): GateResult[] {
  return results.filter((r) => r.verdict === "fail");
}

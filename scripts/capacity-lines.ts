/**
 * Reads the `capacity` stack output (JSON) on stdin and prints one line per trial point: its verdict,
 * offered and achieved rate, median TTFT and TPOT against the profile fits' prediction, and goodput.
 */
import * as fs from "node:fs";
import type { CapacityPoint } from "../lib/trial/capacity";

export function capacityLines(capacity: { points?: Record<string, CapacityPoint> } | null): string[] {
  const points = Object.entries(capacity?.points ?? {});
  if (!points.length) return ["no trial point configured (trial.points)"];
  return points.map(
    ([id, p]) =>
      `${id}: ${p.verdict}, ${p.offeredRate}/s offered, ${p.achievedRate.toFixed(2)}/s sent, ${p.errors} failed, goodput ${(p.goodFraction * 100).toFixed(0)}%; ` +
      `TTFT p50 ${p.p50TtftMs.toFixed(0)} ms (predicted ${p.predictedTtftMs.toFixed(0)}), TPOT p50 ${p.p50TpotMs.toFixed(1)} ms (predicted ${p.predictedTpotMs.toFixed(1)})${p.departs ? ", departs from the prediction" : ""}`,
  );
}

if (require.main === module) process.stdout.write(capacityLines(JSON.parse(fs.readFileSync(0, "utf8") || "null") as { points?: Record<string, CapacityPoint> } | null).join("\n") + "\n");

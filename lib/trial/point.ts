/** What a trial point must be, field by field, before anything is planned or sent. */
import type { TrialPoint } from "./types";

const isPositiveInt = (v: unknown): v is number => Number.isInteger(v) && (v as number) > 0;

/** Each problem of a point as given, naming `point.<field>`; empty when it is a TrialPoint. */
export function pointProblems(raw: unknown): string[] {
  const p = (raw ?? {}) as Partial<Record<keyof TrialPoint, unknown>>;
  const problems: string[] = [];
  if (typeof p.id !== "string" || !/^[a-z0-9][a-z0-9-]{0,39}$/.test(p.id)) problems.push(`point.id must be lowercase letters, digits and "-", got ${JSON.stringify(p.id)}`);
  if (!(typeof p.rate === "number" && Number.isFinite(p.rate) && p.rate > 0)) problems.push(`point.rate must be a positive number of requests per second, got ${JSON.stringify(p.rate)}`);
  if (!isPositiveInt(p.requests)) problems.push(`point.requests must be a positive integer, got ${JSON.stringify(p.requests)}`);
  if (p.arrival !== "poisson" && p.arrival !== "constant") problems.push(`point.arrival must be "poisson" or "constant", got ${JSON.stringify(p.arrival)}`);
  if (!Number.isInteger(p.seed) || (p.seed as number) < 0) problems.push(`point.seed must be a non-negative integer, got ${JSON.stringify(p.seed)}`);
  if (!Array.isArray(p.mix) || p.mix.length === 0) {
    problems.push("point.mix must list at least one {promptTokens, outputTokens, weight}");
    return problems;
  }
  p.mix.forEach((c: Record<string, unknown>, j: number) => {
    for (const k of ["promptTokens", "outputTokens"]) if (!isPositiveInt(c?.[k])) problems.push(`point.mix[${j}].${k} must be a positive integer, got ${JSON.stringify(c?.[k])}`);
    if (!(typeof c?.weight === "number" && c.weight > 0)) problems.push(`point.mix[${j}].weight must be a positive number, got ${JSON.stringify(c?.weight)}`);
  });
  return problems;
}

/**
 * `npm run trial -- --stack <name> --rate R --requests N [--point <id>] [--prompt-tokens P --output-tokens O] [--seed S]`:
 * one ad-hoc capacity trial point against a deployed stack, for an operator exploring the range. It
 * takes the routes, engines, profiles and credentials of a configured point (`--point`, else the first)
 * from the stack's state, runs the point exactly as `pulumi up` would (through the router host's tunnel,
 * drained, reconciled) and keeps it as a `load-trial` record with subject `adhoc-<time>`. It changes no
 * state: the next `up` neither sees nor replaces it. Exits 2 on bad arguments, 1 when the point cannot run.
 */
import type { LoadTrialInputs } from "../dynamic-providers/load-trial/schema";
import { revealed } from "../lib/secret-envelope";
import { parseFlags, parseOrExit, positiveNumber, required, UsageError } from "./args";
import { openStack } from "./stack/select";

const USAGE = "usage: npm run trial -- --stack <name> --rate <requests/s> --requests <n> [--point <id>] [--prompt-tokens <n> --output-tokens <n>] [--seed <n>]";

export interface TrialArgs {
  stack: string;
  rate: number;
  requests: number;
  point?: string;
  promptTokens?: number;
  outputTokens?: number;
  seed?: number;
}

const integer = (flag: string, text: string | undefined): number | undefined => {
  if (text === undefined) return undefined;
  const v = positiveNumber(flag, text, 0);
  if (!Number.isInteger(v)) throw new UsageError(`--${flag} wants a positive integer, got ${JSON.stringify(text)}`);
  return v;
};

export function parseTrialArgs(argv: readonly string[]): TrialArgs {
  const wants = { stack: "a stack name", rate: "requests per second", requests: "a request count", point: "the configured point to take the fleet from", "prompt-tokens": "a prompt length", "output-tokens": "an output length", seed: "a seed" };
  const s = { type: "string" } as const;
  const v = parseFlags(argv, { stack: s, rate: s, requests: s, point: s, "prompt-tokens": s, "output-tokens": s, seed: s }, wants);
  const promptTokens = integer("prompt-tokens", v["prompt-tokens"]);
  const outputTokens = integer("output-tokens", v["output-tokens"]);
  if ((promptTokens === undefined) !== (outputTokens === undefined)) throw new UsageError("--prompt-tokens and --output-tokens go together: one workload class of both lengths");
  const seed = v.seed === undefined ? undefined : Number(v.seed);
  if (seed !== undefined && !(Number.isInteger(seed) && seed >= 0)) throw new UsageError(`--seed wants a non-negative integer, got ${JSON.stringify(v.seed)}`);
  return {
    stack: required(v.stack, "stack", wants.stack),
    rate: positiveNumber("rate", required(v.rate, "rate", wants.rate), 0),
    requests: integer("requests", required(v.requests, "requests", wants.requests))!,
    ...(v.point ? { point: v.point } : {}),
    ...(promptTokens !== undefined ? { promptTokens, outputTokens } : {}),
    ...(seed !== undefined ? { seed } : {}),
  };
}

/** The configured point's inputs from the stack's state, with the ad-hoc rate, count and mix. */
export function adhocInputs(resources: ReadonlyArray<{ type?: string; inputs?: Record<string, unknown> }>, a: TrialArgs): LoadTrialInputs {
  const trials = resources.filter((r) => r.type?.endsWith(":LoadTrial")).map((r) => revealed(r.inputs) as LoadTrialInputs);
  if (!trials.length) throw new Error(`stack ${a.stack} has no trial point to take the fleet's routes from: add one to trial.points and run pulumi up`);
  const base = a.point ? trials.find((t) => t.point.id === a.point) : trials[0];
  if (!base) throw new Error(`stack ${a.stack} has no trial point ${JSON.stringify(a.point)}; it has ${trials.map((t) => t.point.id).join(", ")}`);
  const mix = a.promptTokens !== undefined ? [{ promptTokens: a.promptTokens, outputTokens: a.outputTokens!, weight: 1 }] : base.point.mix;
  return { ...base, point: { ...base.point, id: "adhoc", rate: a.rate, requests: a.requests, mix, seed: a.seed ?? base.point.seed } };
}

async function main(): Promise<void> {
  const args = parseOrExit(() => parseTrialArgs(process.argv.slice(2)), USAGE);
  try {
    const { runLoadTrial } = await import("../dynamic-providers/load-trial/provider");
    const state = (await (await openStack(args.stack)).exportStack()).deployment as { resources?: Array<{ type?: string; inputs?: Record<string, unknown> }> };
    const inputs = adhocInputs(state.resources ?? [], args);
    const subject = `adhoc-${new Date().toISOString().replace(/[-:]/g, "").replace(/\..*$/, "")}`;
    const r = await runLoadTrial(inputs, { subject, log: (line) => process.stderr.write(`${line}\n`) });
    const s = r.summary;
    process.stdout.write(
      [
        `${subject}: ${r.verdict}${r.reasons.length ? ` (${r.reasons.join("; ")})` : ""}`,
        `offered ${inputs.point.rate}/s, sent ${s.achieved_send_rate.toFixed(2)}/s, ${s.completed} completed, ${s.failed} failed, goodput ${(s.good_fraction * 100).toFixed(1)}%`,
        `TTFT p50 ${s.p50_ttft_ms.toFixed(1)} ms p99 ${s.p99_ttft_ms.toFixed(1)} ms (predicted ${(r.prediction.ttftS * 1000).toFixed(1)} ms); TPOT p50 ${s.p50_tpot_ms.toFixed(1)} ms (predicted ${(r.prediction.tpotS * 1000).toFixed(1)} ms)${r.departure.flagged ? "; departs from the prediction" : ""}`,
        `record: ${r.evidence.relativePath}`,
      ].join("\n") + "\n",
    );
  } catch (e) {
    process.stderr.write(`trial on stack ${args.stack} failed: ${(e as Error).message.split("\n")[0]}\n`);
    process.exit(1);
  }
}

if (require.main === module) void main();

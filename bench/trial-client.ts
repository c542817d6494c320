/**
 * Whether the capacity trial's load client keeps its offered rate, measured against a bare undici floor.
 *
 *   npm run bench:trial-client [-- --rates 50,100,200,400,800] [--requests 300] [--reps 3]
 *
 * A loopback SSE server in a child process answers every completion at once (16 token events, usage,
 * [DONE]). After one uncounted warm-up of each, per rate, upward, it alternates `runPoint` (lib/trial/client.ts, Poisson arrivals) with a floor
 * that issues the same requests at the same due times over one undici pool and only drains the bodies,
 * `--reps` times each, and prints one JSON object of medians: p99 send lag, achieved send rate and CPU for
 * both, and `maxSustainedRate`, the highest rate (counting up, stopping at the first miss) whose p99 send lag
 * stays under 5 ms with the achieved send rate within 2% of the target, against `requiredRate`, ten times
 * the highest rate the tests run a point at.
 */
import { fork, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { performance } from "node:perf_hooks";
import { achievedSendRate, percentile } from "../lib/trial/summary";
import { arrivalSchedule, HIGHEST_TEST_RATE } from "../lib/trial/schedule";
import { promptIds } from "../lib/trial/prompt";
import { runPoint } from "../lib/trial/client";
import type { RequestRecord, TrialPoint } from "../lib/trial/types";
import { parseFlags, parseOrExit, positiveNumber } from "../scripts/args";

const OUTPUT_TOKENS = 16;
const PROMPT_TOKENS = 128;
const VOCAB = 32000;
const MAX_P99_LAG_MS = 5;
const RATE_TOLERANCE = 0.02;

const USAGE = "usage: npm run bench:trial-client [-- --rates 50,100,200,400,800] [--requests 300] [--reps 3]";

function parseBenchArgs(argv: readonly string[]): { rates: number[]; requests: number; reps: number } {
  const wants = { rates: "rates in requests per second, comma-separated", requests: "requests per run", reps: "repetitions per rate" };
  const values = parseFlags(argv, { rates: { type: "string" }, requests: { type: "string" }, reps: { type: "string" } }, wants);
  const rates = (values.rates ?? "50,100,200,400,800").split(",").map((r) => positiveNumber("rates", r, 0));
  return { rates: rates.sort((a, b) => a - b), requests: Math.round(positiveNumber("requests", values.requests, 300)), reps: Math.round(positiveNumber("reps", values.reps, 3)) };
}

/** The child: an engine that answers at once, so only the client's own costs shape the figures. */
function serve(): void {
  const tokens = Array.from({ length: OUTPUT_TOKENS }, (_, i) =>
    `data: ${JSON.stringify({ id: "cmpl-b", object: "text_completion", created: 1, model: "m", choices: [{ index: 0, text: "x", logprobs: null, finish_reason: i === OUTPUT_TOKENS - 1 ? "length" : null, stop_reason: null }] })}\n\n`,
  ).join("");
  const server = http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8" });
      const usage = { prompt_tokens: PROMPT_TOKENS, completion_tokens: OUTPUT_TOKENS, total_tokens: PROMPT_TOKENS + OUTPUT_TOKENS };
      res.end(`${tokens}data: ${JSON.stringify({ id: "cmpl-b", object: "text_completion", created: 1, model: "m", choices: [], usage })}\n\ndata: [DONE]\n\n`);
    });
  });
  server.listen(0, "127.0.0.1", () => process.send?.((server.address() as AddressInfo).port));
  process.on("disconnect", () => process.exit(0));
}

interface Figures {
  p99SendLagMs: number;
  achievedRate: number;
  cpuS: number;
  failed: number;
}

async function timedCpu<T>(fn: () => Promise<T>): Promise<{ value: T; cpuS: number }> {
  const c0 = process.cpuUsage();
  const value = await fn();
  const c = process.cpuUsage(c0);
  return { value, cpuS: (c.user + c.system) / 1e6 };
}

const lagP99 = (records: Array<Pick<RequestRecord, "sentS" | "dueS">>) => percentile(records.map((r) => (r.sentS - r.dueS) * 1000).sort((a, b) => a - b), 99);

async function clientRun(baseUrl: string, point: TrialPoint, rep: number): Promise<Figures> {
  const { value: run, cpuS } = await timedCpu(() => runPoint({ baseUrl, model: "m", point, vocabSize: VOCAB, requestTimeoutS: 30, requestIdPrefix: `bench-${point.rate}-${rep}-` }));
  return { p99SendLagMs: lagP99(run.records), achievedRate: achievedSendRate(run.records), cpuS, failed: run.records.filter((r) => r.status !== "ok").length };
}

/** The floor: the same requests at the same due times, each body only drained; nothing parsed or recorded. */
async function floorRun(baseUrl: string, point: TrialPoint, rep: number): Promise<Figures> {
  const { Pool } = require("undici") as typeof import("undici");
  const schedule = arrivalSchedule(point);
  const bodies = schedule.map((r) =>
    JSON.stringify({ model: "m", prompt: promptIds(r.promptTokens, VOCAB, `floor-${point.rate}-${rep}-`, r.index), max_tokens: r.outputTokens, min_tokens: r.outputTokens, ignore_eos: true, temperature: 0, stream: true, stream_options: { include_usage: true } }),
  );
  const { value: sends, cpuS } = await timedCpu(async () => {
    const pool = new Pool(baseUrl, { connections: point.requests, pipelining: 1 });
    const t0 = performance.now();
    const now = () => (performance.now() - t0) / 1000;
    const sent: Array<{ dueS: number; sentS: number }> = [];
    const pending: Array<Promise<unknown>> = [];
    let failed = 0;
    await new Promise<void>((done) => {
      let i = 0;
      const tick = () => {
        while (i < schedule.length && schedule[i].dueS <= now()) {
          sent.push({ dueS: schedule[i].dueS, sentS: now() });
          const headers = { "content-type": "application/json", "x-request-id": `floor-${i}` };
          pending.push(pool.request({ path: "/v1/completions", method: "POST", headers, body: bodies[i] }).then((res) => res.body.dump(), () => failed++));
          i++;
        }
        if (i >= schedule.length) return done();
        setTimeout(tick, Math.max(0, Math.ceil((schedule[i].dueS - now()) * 1000)));
      };
      setTimeout(tick, Math.ceil(schedule[0].dueS * 1000));
    });
    await Promise.all(pending);
    await pool.close();
    return { sent, failed };
  });
  const records = sends.sent.map((s) => ({ ...s, index: 0, requestId: "", promptTokens: 0, outputTokens: 0, endS: s.sentS, chunkGapsS: [], status: "ok" as const }));
  return { p99SendLagMs: lagP99(records), achievedRate: achievedSendRate(records), cpuS, failed: sends.failed };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const round = (x: number, digits = 3) => Number(x.toFixed(digits));

function medians(runs: Figures[], rate: number) {
  const p99SendLagMs = median(runs.map((r) => r.p99SendLagMs));
  const achievedRate = median(runs.map((r) => r.achievedRate));
  return {
    p99SendLagMs: round(p99SendLagMs),
    achievedRate: round(achievedRate, 1),
    cpuS: round(median(runs.map((r) => r.cpuS))),
    failed: runs.reduce((s, r) => s + r.failed, 0),
    sustained: p99SendLagMs < MAX_P99_LAG_MS && Math.abs(achievedRate / rate - 1) <= RATE_TOLERANCE,
  };
}

async function main(): Promise<void> {
  const args = parseOrExit(() => parseBenchArgs(process.argv.slice(2)), USAGE);
  const child: ChildProcess = fork(__filename, ["--serve"], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const stop = () => child.connected && child.disconnect();
  process.on("SIGINT", () => {
    stop();
    process.exit(130);
  });
  try {
    const [port] = (await once(child, "message")) as [number];
    const baseUrl = `http://127.0.0.1:${port}`;
    // Warm-up, not counted: loads undici and lets both paths' code be compiled before any figure is taken.
    const warm: TrialPoint = { id: "warm-up", rate: 200, requests: 200, arrival: "poisson", seed: 0, mix: [{ promptTokens: PROMPT_TOKENS, outputTokens: OUTPUT_TOKENS, weight: 1 }] };
    await clientRun(baseUrl, warm, -1);
    await floorRun(baseUrl, warm, -1);
    const steps = [];
    let maxSustainedRate = 0;
    let missed = false;
    for (const rate of args.rates) {
      const point: TrialPoint = { id: `bench-${rate}`, rate, requests: args.requests, arrival: "poisson", seed: rate, mix: [{ promptTokens: PROMPT_TOKENS, outputTokens: OUTPUT_TOKENS, weight: 1 }] };
      const client: Figures[] = [];
      const floor: Figures[] = [];
      for (let rep = 0; rep < args.reps; rep++) {
        // Alternate which goes first, so neither always inherits the other's warm sockets or GC debt.
        if (rep % 2 === 0) {
          client.push(await clientRun(baseUrl, point, rep));
          floor.push(await floorRun(baseUrl, point, rep));
        } else {
          floor.push(await floorRun(baseUrl, point, rep));
          client.push(await clientRun(baseUrl, point, rep));
        }
      }
      const step = { rate, client: medians(client, rate), floor: medians(floor, rate) };
      steps.push(step);
      if (!missed && step.client.sustained && step.client.failed === 0) maxSustainedRate = rate;
      else missed = true;
    }
    const requiredRate = 10 * HIGHEST_TEST_RATE;
    console.log(JSON.stringify({ requests: args.requests, reps: args.reps, promptTokens: PROMPT_TOKENS, outputTokens: OUTPUT_TOKENS, criteria: { p99SendLagMsBelow: MAX_P99_LAG_MS, achievedWithin: RATE_TOLERANCE }, steps, maxSustainedRate, requiredRate, meetsRequirement: maxSustainedRate >= requiredRate }, null, 2));
  } finally {
    stop();
  }
}

if (process.argv.includes("--serve")) serve();
else void main();

/**
 * Our preflight (concurrent round-robin schedule and strictly sequential) against the pinned
 * `narwhal-check` on the same fleet document and the same engine simulators on 127.0.0.1.
 *
 *   . scripts/env.sh && nice -n 15 node -r ./tools/ts-require.js bench/preflight-vs-narwhal-check.ts [--sizes 8,16] [--time-scale 1] [--rounds 3]
 *
 * Per fleet size: N simulators on distinct ports with pinned roles (the first quarter pinned prefill,
 * the second quarter pinned decode, the rest free), a profile store from each engine's ground truth and
 * live generation, then per round narwhal-check, ours concurrent and ours sequential, the order reversed
 * every other round. Prints one JSON object: median wall times over the rounds (and each round's), the
 * transfer phase, the schedule's rounds, the last round's per-gate verdicts, failed lines and per-pair
 * consume verdicts side by side, and whether the verdicts agreed in every round. The default time scale 1 keeps the
 * pace probe (about 0.6 s) well above scheduling jitter; at 0.05 it is about 30 ms, and on a busy
 * machine pace then fails by noise in either tool. Every simulator is stopped at the end, also on error.
 */
import { spawnSync } from "node:child_process";
import * as path from "node:path";
import { parseNarwhalReport } from "../lib/preflight/narwhal-report";
import { runPreflight } from "../lib/preflight/run";
import type { GateProfile } from "../lib/preflight/judge";
import type { ScheduleMode } from "../lib/preflight/schedule";
import { parseFlags, parseOrExit, positiveNumber, UsageError } from "../scripts/args";
import { KV_BOTH, makeModel, removeTemps, ROOT, spawnEngine, stopAll, tempDir, type SimEngine } from "../test/unit/sim-engine/helpers";
import { simPreflight, simProfileRow, writeSimFleet } from "../test/unit/sim-engine/sim-fleet";

const API_KEY = "sk-narwhal-bench-3f8a17";
const CHECK = path.join(ROOT, ".tools", "venv", "bin", "narwhal-check");
const ARGS = ["--served-model-name", "tiny", "--api-key", API_KEY, "--max-model-len", "16384", "--max-num-seqs", "8", "--kv-transfer-config", KV_BOTH];
/** Simulators started at once: each is a Node process, and the machine may be small. */
const START_BATCH = 4;

const USAGE = "usage: node -r ./tools/ts-require.js bench/preflight-vs-narwhal-check.ts [--sizes N,N] [--time-scale X] [--rounds N]";

function parseBenchArgs(argv: readonly string[]): { sizes: number[]; timeScale: number; rounds: number } {
  const wants = { sizes: "fleet sizes of at least 2, e.g. 8,16", "time-scale": "a positive number", rounds: "a whole number of at least 1" };
  const values = parseFlags(argv, { sizes: { type: "string" }, "time-scale": { type: "string" }, rounds: { type: "string" } }, wants);
  const sizes = (values.sizes ?? "8,16").split(",").map(Number);
  if (sizes.some((n) => !Number.isInteger(n) || n < 2)) throw new UsageError(`--sizes wants ${wants.sizes}, got ${JSON.stringify(values.sizes)}`);
  const rounds = Number(values.rounds ?? "3");
  if (!(Number.isInteger(rounds) && rounds >= 1)) throw new UsageError(`--rounds wants ${wants.rounds}, got ${JSON.stringify(values.rounds)}`);
  return { sizes, timeScale: positiveNumber("time-scale", values["time-scale"], 1), rounds };
}

interface Member {
  iid: string;
  engine: SimEngine;
  role: "prefill" | "decode";
  pin: boolean;
}

async function startFleet(n: number, model: string, timeScale: number): Promise<Member[]> {
  const members: Member[] = [];
  for (let i = 0; i < n; i += START_BATCH) {
    const batch = await Promise.all(Array.from({ length: Math.min(START_BATCH, n - i) }, () => spawnEngine({ model, args: ARGS, sim: { timeScale, startupDelayS: 0 } })));
    await Promise.all(batch.map((e) => e.ready(180_000)));
    for (const e of batch) {
      const k = members.length;
      const quarter = Math.floor(n / 4);
      const role = k < quarter ? "prefill" : "decode";
      members.push({ iid: `e${k}`, engine: e, role, pin: k < 2 * quarter });
    }
  }
  return members;
}

/** Consume verdict per directed pair from gate lines that start with `producer -> consumer`. */
function pairVerdicts(lines: ReadonlyArray<{ status: string; message: string }>): Record<string, "pass" | "fail"> {
  const out: Record<string, "pass" | "fail"> = {};
  for (const l of lines) {
    const m = /^(\S+) -> (\S+?):?\s/.exec(l.message);
    if (!m) continue;
    const key = `${m[1]}>${m[2]}`;
    out[key] = l.status === "fail" || out[key] === "fail" ? "fail" : "pass";
  }
  return out;
}

async function benchSize(n: number, model: string, timeScale: number, rounds: number) {
  const members = await startFleet(n, model, timeScale);
  const dir = tempDir("bench-preflight-");
  const rows = await Promise.all(members.map((m) => simProfileRow(m.iid, m.engine)));
  const engines = members.map((m) => ({ iid: m.iid, url: m.engine.url, role: m.role, pin: m.pin }));
  const { file, doc } = writeSimFleet(dir, { model: "tiny", engines, rows, tpotS: 0.125, writer: "bench" });

  const runNarwhal = async () => {
    const t0 = Date.now();
    const narwhal = spawnSync(CHECK, ["--fleet", file, "--format", "json"], { env: { ...process.env, NARWHAL_ENGINE_API_KEY: API_KEY }, timeout: 1_800_000, maxBuffer: 64 * 1024 * 1024 });
    const wallS = (Date.now() - t0) / 1000;
    let status: unknown;
    try {
      status = (JSON.parse(narwhal.stdout.toString()) as { status?: unknown }).status;
    } catch {
      status = `unreadable output (exit ${narwhal.status})`;
    }
    return { wallS, exit: narwhal.status, status, report: parseNarwhalReport(narwhal.stderr.toString()) };
  };

  const profiles = new Map<string, GateProfile>(rows.map((r) => [r.iid, r]));
  const ours = async (schedule: ScheduleMode) => {
    const { plan, observer } = simPreflight(doc, profiles, API_KEY, schedule);
    // Where the time goes: per observer call (health, pace, transfer, ...) the span from its first start to its
    // last end. The transfer span alone is where the schedule matters.
    const spans = new Map<string, { first: number; last: number; calls: number }>();
    const timed = Object.fromEntries(
      Object.entries(observer).map(([name, f]) => [
        name,
        async (...a: unknown[]) => {
          const started = Date.now();
          try {
            return await (f as (...x: unknown[]) => Promise<unknown>)(...a);
          } finally {
            const s = spans.get(name) ?? { first: started, last: 0, calls: 0 };
            spans.set(name, { first: Math.min(s.first, started), last: Math.max(s.last, Date.now()), calls: s.calls + 1 });
          }
        },
      ]),
    ) as unknown as typeof observer;
    const t = Date.now();
    const outcome = await runPreflight(plan, timed).finally(() => observer.close());
    const phasesS = Object.fromEntries([...spans].filter(([name]) => name !== "close").map(([name, v]) => [name, { fromStartS: (v.first - t) / 1000, spanS: (v.last - v.first) / 1000, calls: v.calls }]));
    const transfers = spans.get("transfer");
    return { wallS: (Date.now() - t) / 1000, transfersS: transfers ? (transfers.last - transfers.first) / 1000 : null, phasesS, outcome };
  };
  // Rounds in alternating order, so a slow spell of the machine is not always charged to the same tool;
  // wall times are the rounds' medians, verdicts must agree in every round.
  type Round = { narwhal: Awaited<ReturnType<typeof runNarwhal>>; concurrent: Awaited<ReturnType<typeof ours>>; sequential: Awaited<ReturnType<typeof ours>> };
  const done: Round[] = [];
  for (let r = 0; r < rounds; r++) {
    const runs = { narwhal: runNarwhal, concurrent: () => ours("concurrent"), sequential: () => ours("sequential") } as const;
    const order: Array<keyof typeof runs> = r % 2 === 0 ? ["narwhal", "concurrent", "sequential"] : ["sequential", "concurrent", "narwhal"];
    const round: Partial<Round> = {};
    for (const k of order) (round as Record<string, unknown>)[k] = await runs[k]();
    done.push(round as Round);
  }
  const roundAgrees = (x: Round) => {
    const v = (o: Round["concurrent"]) => JSON.stringify(Object.fromEntries(o.outcome.gates.map((g) => [g.gate, g.verdict])));
    return v(x.concurrent) === v(x.sequential) && Object.entries(JSON.parse(v(x.concurrent)) as Record<string, string>).every(([g, verdict]) => (x.narwhal.report.verdicts as Record<string, string>)[g] === verdict);
  };
  const { narwhal: last, concurrent, sequential } = done[done.length - 1];
  const theirs = last.report;
  const narwhal = { status: last.exit };
  const status = last.status;
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const narwhalS = median(done.map((d) => d.narwhal.wallS));
  const concurrentS = median(done.map((d) => d.concurrent.wallS));
  const sequentialS = median(done.map((d) => d.sequential.wallS));

  const gates = Object.fromEntries(
    concurrent.outcome.gates.map((g) => [g.gate, { concurrent: g.verdict, sequential: sequential.outcome.gates.find((s) => s.gate === g.gate)!.verdict, narwhalCheck: theirs.verdicts[g.gate] }]),
  );
  const transfersOf = (o: typeof concurrent) => Object.fromEntries(o.outcome.transfers.map((t) => [`${t.producer}>${t.consumer}`, t.status === "passed" ? "pass" : "fail"]));
  const c = transfersOf(concurrent);
  const s = transfersOf(sequential);
  const nw = pairVerdicts(theirs.lines.consume ?? []);
  const keys = [...new Set([...Object.keys(c), ...Object.keys(s), ...Object.keys(nw)])].sort((a, b) => a.localeCompare(b, "en", { numeric: true }));
  const pairs = keys.map((k) => ({ pair: k, concurrent: c[k] ?? null, sequential: s[k] ?? null, narwhalCheck: nw[k] ?? null }));
  const result = {
    engines: n,
    pinnedPrefill: members.filter((m) => m.pin && m.role === "prefill").map((m) => m.iid),
    pinnedDecode: members.filter((m) => m.pin && m.role === "decode").map((m) => m.iid),
    pairs: keys.length,
    rounds: done.length,
    wallS: { oursConcurrent: concurrentS, oursSequential: sequentialS, narwhalCheck: narwhalS },
    wallSPerRound: done.map((d) => ({ oursConcurrent: d.concurrent.wallS, oursSequential: d.sequential.wallS, narwhalCheck: d.narwhal.wallS })),
    speedupOverNarwhalCheck: Number((narwhalS / concurrentS).toFixed(2)),
    verdictsAgreeEveryRound: done.every(roundAgrees),
    transferPhaseS: { oursConcurrent: concurrent.transfersS, oursSequential: sequential.transfersS },
    phasesS: { oursConcurrent: concurrent.phasesS, oursSequential: sequential.phasesS },
    scheduleRounds: { concurrent: concurrent.outcome.rounds, sequential: sequential.outcome.rounds },
    narwhalCheck: { exit: narwhal.status, status },
    gates,
    failedLines: {
      oursConcurrent: concurrent.outcome.gates.flatMap((g) => g.lines.filter((l) => l.status === "fail").map((l) => `${g.gate}: ${l.message}`)),
      oursSequential: sequential.outcome.gates.flatMap((g) => g.lines.filter((l) => l.status === "fail").map((l) => `${g.gate}: ${l.message}`)),
      narwhalCheck: Object.entries(theirs.lines).flatMap(([g, ls]) => ls.filter((l) => l.status === "fail").map((l) => `${g}: ${l.message}`)),
    },
    gatesAgree: Object.values(gates).every((g) => g.concurrent === g.narwhalCheck && g.sequential === g.narwhalCheck),
    pairVerdicts: pairs,
    pairsAgree: pairs.every((p) => p.concurrent !== null && p.concurrent === p.sequential && p.sequential === p.narwhalCheck),
  };
  await stopAll();
  return result;
}

async function main() {
  const { sizes, timeScale, rounds } = parseOrExit(() => parseBenchArgs(process.argv.slice(2)), USAGE);
  const model = makeModel({ config: { max_position_embeddings: 32768 } });
  const results = [];
  for (const n of sizes) results.push(await benchSize(n, model, timeScale, rounds));
  console.log(JSON.stringify({ timeScale, results }, null, 1));
}

const cleanup = async () => {
  await stopAll();
  removeTemps();
};
process.on("SIGINT", () => void cleanup().then(() => process.exit(130)));
main()
  .catch((err) => {
    console.error(err instanceof Error ? err.stack : err);
    process.exitCode = 1;
  })
  .finally(cleanup);

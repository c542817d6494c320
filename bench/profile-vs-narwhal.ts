/**
 * Profiles the same simulated engines with the pinned `narwhal-profile` and with this program's driver
 * (`npm run profile`, lib/profiling), and compares both stores with the simulator's true coefficients.
 *
 *   npm run bench:profile -- [--engines 2] [--time-scale 0.5] [--rounds 1]
 *
 * Starts `--engines` engine simulators on 127.0.0.1, each with its own known latency model, writes one
 * fleet.json per tool (same engines, same sweep), and runs the two commands one after the other
 * (alternating which goes first each round), so they never measure at the same time. Prints one JSON
 * object: per tool and engine the fitted coefficients, their relative errors against the simulator's ground truth (its control port's `/truth`), the
 * prediction error of the curves over the swept domain, and each run's wall time.
 */
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { performance } from "node:perf_hooks";
import { parseFlags, parseOrExit, positiveNumber } from "../scripts/args";
import { http, makeModel, removeTemps, ROOT, startEngine, stopAll, tempDir, type SimEngine } from "../test/unit/sim-engine/helpers";

const API_KEY = "sk-bench-profile";
const KEY_ENV = "NARWHAL_BENCH_ENGINE_KEY";
const MAX_MODEL_LEN = 4096;
const SWEEP = { prefill: [256, 512, 1024, 2048, 3072], decodeInput: [256, 1024], concurrency: [1, 4, 8], decodeTokens: 32, prefillRepeats: 3 };
/** Distinct true models per engine (the simulator's defaults first). */
const LATENCIES = [{}, { prefillA: 4e-8, decodeKv: 6e-6, decodeReq: 0.001, decodeBase: 0.02 }, { prefillB: 1.2e-4, prefillC: 0.01, decodeKv: 2e-6 }];
/** Bounded wait for one profiling run. */
const RUN_TIMEOUT_MS = 900_000;

const USAGE = "usage: npm run bench:profile -- [--engines N] [--time-scale X] [--rounds N]";

function parseBenchArgs(argv: readonly string[]): { engines: number; timeScale: number; rounds: number } {
  const wants = { engines: "a positive number of engines", "time-scale": "a positive number", rounds: "a positive number of rounds" };
  const values = parseFlags(argv, { engines: { type: "string" }, "time-scale": { type: "string" }, rounds: { type: "string" } }, wants);
  return { engines: positiveNumber("engines", values.engines, 2), timeScale: positiveNumber("time-scale", values["time-scale"], 0.5), rounds: positiveNumber("rounds", values.rounds, 1) };
}

function run(cmd: string, args: string[]): Promise<{ code: number | null; wallS: number; stderr: string }> {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const child = spawn(cmd, args, { cwd: ROOT, env: { ...process.env, [KEY_ENV]: API_KEY }, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), RUN_TIMEOUT_MS);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, wallS: (performance.now() - t0) / 1000, stderr: stderr.slice(-2000) });
    });
  });
}

type Truth = Record<"prefillA" | "prefillB" | "prefillC" | "decodeKv" | "decodeReq" | "decodeBase", number>;
type Row = Record<string, number | string | null>;

const rel = (got: number, want: number) => Math.abs(got - want) / Math.abs(want);
const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;

/** Relative errors of each coefficient, and of the predicted times over the swept domain. */
function compare(row: Row, t: Truth): Record<string, unknown> {
  const n = (k: string) => row[k] as number;
  const coefficients = { prefillA: n("ttft_a"), prefillB: n("ttft_b"), prefillC: n("ttft_c"), decodeKv: n("tpot_slope"), decodeReq: n("tpot_request_slope"), decodeBase: n("tpot_intercept") };
  const errors = Object.fromEntries(Object.entries(coefficients).map(([k, v]) => [k, rel(v, t[k as keyof Truth])]));
  const prefill = SWEEP.prefill.map((x) => rel(n("ttft_a") * x * x + n("ttft_b") * x + n("ttft_c"), t.prefillA * x * x + t.prefillB * x + t.prefillC));
  const decode = SWEEP.decodeInput.flatMap((isl) =>
    SWEEP.concurrency.map((q) => {
      const kv = q * (isl + SWEEP.decodeTokens / 2);
      return rel(n("tpot_slope") * kv + n("tpot_request_slope") * q + n("tpot_intercept"), t.decodeKv * kv + t.decodeReq * q + t.decodeBase);
    }),
  );
  return { coefficients, relativeErrors: errors, meanCoefficientError: mean(Object.values(errors)), prefillPredictionMape: mean(prefill), decodePredictionMape: mean(decode) };
}

async function main(): Promise<void> {
  const args = parseOrExit(() => parseBenchArgs(process.argv.slice(2)), USAGE);
  const count = Math.min(args.engines, LATENCIES.length);
  const timeScale = args.timeScale;
  const rounds = args.rounds;
  const dir = tempDir("bench-profile-");
  const model = makeModel({});
  const engines: SimEngine[] = [];
  for (let i = 0; i < count; i++) {
    engines.push(
      await startEngine({
        model,
        args: ["--served-model-name", "tiny", "--api-key", API_KEY, "--max-model-len", String(MAX_MODEL_LEN), "--max-num-seqs", "8", "--no-enable-prefix-caching"],
        sim: { timeScale, startupDelayS: 0, latency: { default: LATENCIES[i] } },
      }),
    );
  }
  const truths: Truth[] = [];
  for (const e of engines) truths.push(((await http(`${e.controlUrl}/truth`)).json as { effective_coefficients: Truth }).effective_coefficients);
  const sweepArgs = [
    "--prefill-lens", SWEEP.prefill.join(","), "--decode-input-lens", SWEEP.decodeInput.join(","), "--decode-concurrency", SWEEP.concurrency.join(","),
    "--decode-tokens", String(SWEEP.decodeTokens), "--prefill-repeats", String(SWEEP.prefillRepeats),
  ];
  const fleetFor = (name: string) => {
    const file = path.join(dir, `${name}.fleet.json`);
    const doc = {
      schema: "narwhal.fleet",
      schema_version: 2,
      model: "tiny",
      engines: engines.map((e, i) => ({ iid: `e${i}`, url: e.url, role: i === 0 ? "prefill" : "decode" })),
      slo: { ttft_s: 10, tpot_s: 0.5 },
      engine: { engine_api_key_env: KEY_ENV },
      profiles: { path: path.join(dir, `${name}.json`) },
    };
    fs.writeFileSync(file, JSON.stringify(doc, null, 2));
    return file;
  };
  const tools = {
    narwhal: (f: string) => run(path.join(ROOT, ".tools", "venv", "bin", "narwhal-profile"), ["--fleet", f, ...sweepArgs]),
    ours: (f: string) => run(process.execPath, ["-r", path.join(ROOT, "tools", "ts-require.js"), path.join(ROOT, "scripts", "profile.ts"), "--fleet", f, ...sweepArgs]),
  };
  const results: Record<string, Array<Record<string, unknown>>> = { narwhal: [], ours: [] };
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 ? (["ours", "narwhal"] as const) : (["narwhal", "ours"] as const);
    for (const tool of order) {
      const name = `${tool}-${round}`;
      const r = await tools[tool](fleetFor(name));
      if (r.code !== 0) {
        results[tool].push({ round, exit: r.code, wallS: r.wallS, stderr: r.stderr });
        continue;
      }
      const store = JSON.parse(fs.readFileSync(path.join(dir, `${name}.json`), "utf8")) as { profiles: Row[] };
      results[tool].push({
        round,
        wallS: Number(r.wallS.toFixed(2)),
        engines: Object.fromEntries(engines.map((_, i) => [`e${i}`, compare(store.profiles.find((p) => p.iid === `e${i}`)!, truths[i])])),
      });
    }
  }
  const summary = (tool: string) => {
    const ok = results[tool].filter((r) => r.engines);
    const per = ok.flatMap((r) => Object.values(r.engines as Record<string, Record<string, number>>));
    return per.length
      ? {
          wallS: mean(ok.map((r) => r.wallS as number)),
          meanCoefficientError: mean(per.map((p) => p.meanCoefficientError)),
          prefillPredictionMape: mean(per.map((p) => p.prefillPredictionMape)),
          decodePredictionMape: mean(per.map((p) => p.decodePredictionMape)),
        }
      : null;
  };
  process.stdout.write(
    JSON.stringify({ timeScale, sweep: SWEEP, truth: Object.fromEntries(truths.map((t, i) => [`e${i}`, t])), runs: results, summary: { narwhal: summary("narwhal"), ours: summary("ours") } }, null, 2) + "\n",
  );
}

main()
  .catch((err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exitCode = 1;
  })
  .finally(async () => {
    await stopAll();
    removeTemps();
  });

/**
 * Checkpoint hashing throughput, measured through the exact script discovery runs on engine hosts.
 *
 *   . scripts/env.sh && node -r ./tools/ts-require.js bench/checkpoint-hash.ts [--gib 2] [--files 8] [--runs 5] [--dir /tmp]
 *
 * Writes a deterministic multi-GiB checkpoint into a temporary directory, reads it once so every later
 * run hashes from the page cache, then times (median and best of --runs, round-robin): our script on every core and on one,
 * coreutils `sha256sum` and `openssl dgst -sha256` one process per file with `xargs -P nproc`, and a
 * re-discovery of the unchanged directory (stat only). Prints one JSON object; removes the directory.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { createCipheriv, createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { DEFAULT_RACY_WINDOW_MS } from "../lib/checkpoint/driver";
import type { HashResult } from "../lib/checkpoint/driver";
import { hashCheckpointLocal } from "../lib/checkpoint/local-hash";
import { parseFlags, parseOrExit, positiveNumber } from "../scripts/args";

const GiB = 1024 ** 3;
const CHUNK = 16 * 1024 * 1024;

const USAGE = "usage: node -r ./tools/ts-require.js bench/checkpoint-hash.ts [--gib N] [--files N] [--runs N] [--dir PATH]";

function parseBenchArgs(argv: readonly string[]): { gib: number; files: number; runs: number; dir: string } {
  const wants = { gib: "a positive size in GiB", files: "a positive number of files", runs: "a positive number of runs", dir: "a folder for the temporary checkpoint" };
  const values = parseFlags(argv, { gib: { type: "string" }, files: { type: "string" }, runs: { type: "string" }, dir: { type: "string" } }, wants);
  return { gib: positiveNumber("gib", values.gib, 2), files: positiveNumber("files", values.files, 8), runs: positiveNumber("runs", values.runs, 5), dir: values.dir ?? os.tmpdir() };
}

/** AES-256-CTR keystream keyed by the file name: incompressible, and the same bytes on every run. */
function writeShard(file: string, bytes: number): void {
  const cipher = createCipheriv("aes-256-ctr", createHash("sha256").update(path.basename(file)).digest(), Buffer.alloc(16));
  const zeros = Buffer.alloc(CHUNK);
  const fd = fs.openSync(file, "w");
  try {
    for (let left = bytes; left > 0; left -= CHUNK) fs.writeSync(fd, cipher.update(left >= CHUNK ? zeros : zeros.subarray(0, left)));
  } finally {
    fs.closeSync(fd);
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const round = (x: number, digits = 3) => Number(x.toFixed(digits));

interface Timed<T> {
  s: number;
  value: T;
}

async function timed<T>(fn: () => Promise<T> | T): Promise<Timed<T>> {
  const t0 = process.hrtime.bigint();
  const value = await fn();
  return { s: Number(process.hrtime.bigint() - t0) / 1e9, value };
}

/** Runs `tool...` once per file, nproc at a time, and returns path -> hex as the tool printed it. */
function parallelTool(dir: string, files: string[], tool: string[], nproc: number): Record<string, string> {
  const r = spawnSync("xargs", ["-0", "-P", String(nproc), "-n", "1", ...tool], { cwd: dir, input: files.join("\0"), encoding: "utf8", maxBuffer: 1 << 26 });
  if (r.status !== 0) throw new Error(`${tool.join(" ")} failed: ${r.stderr}`);
  // Both tools print "<hex> <space or *><name>" (openssl with -r).
  return Object.fromEntries(r.stdout.trim().split("\n").map((l) => [l.slice(66), l.slice(0, 64)]));
}

async function main(): Promise<void> {
  const args = parseOrExit(() => parseBenchArgs(process.argv.slice(2)), USAGE);
  const gib = args.gib;
  const fileCount = Math.round(args.files);
  const runs = Math.round(args.runs);
  const nproc = Number(execFileSync("nproc", { encoding: "utf8" }).trim());
  const totalBytes = Math.round(gib * GiB);
  const dir = fs.mkdtempSync(path.join(args.dir, "narwhal-ckpt-bench-"));
  const cleanup = () => fs.rmSync(dir, { recursive: true, force: true });
  process.on("SIGINT", () => {
    cleanup();
    process.exit(130);
  });

  try {
    const names = Array.from({ length: fileCount }, (_, i) => `model-${String(i + 1).padStart(5, "0")}-of-${String(fileCount).padStart(5, "0")}.safetensors`);
    const per = Math.floor(totalBytes / fileCount);
    const generate = await timed(() => names.forEach((n, i) => writeShard(path.join(dir, n), i === fileCount - 1 ? totalBytes - per * (fileCount - 1) : per)));
    fs.writeFileSync(path.join(dir, "config.json"), '{"model_type":"llama"}\n');
    const files = [...names, "config.json"];

    // Every file read once, so each measurement below hashes from the page cache, not the disk.
    const warm = await timed(() => spawnSync("sh", ["-c", 'cat -- "$@" > /dev/null', "sh", ...files], { cwd: dir }));
    // Re-discovery trusts a fingerprint only once its ctime is outside the racy window of the scan.
    await new Promise((r) => setTimeout(r, DEFAULT_RACY_WINDOW_MS + 100));

    // Round-robin rather than tool after tool: on a shared machine, load spikes then hit every tool alike.
    const opts = { timeoutS: 3600 };
    const full = await hashCheckpointLocal(dir, undefined, opts);
    const ours: Array<Timed<HashResult>> = [];
    const oneWorker: Array<Timed<HashResult>> = [];
    const sha256sum: Array<Timed<Record<string, string>>> = [];
    const openssl: Array<Timed<Record<string, string>>> = [];
    const rediscover: Array<Timed<HashResult>> = [];
    for (let i = 0; i < runs; i++) {
      ours.push(await timed(() => hashCheckpointLocal(dir, undefined, opts)));
      oneWorker.push(await timed(() => hashCheckpointLocal(dir, undefined, { ...opts, workers: 1 })));
      sha256sum.push(await timed(() => parallelTool(dir, files, ["sha256sum"], nproc)));
      openssl.push(await timed(() => parallelTool(dir, files, ["openssl", "dgst", "-sha256", "-r"], nproc)));
      rediscover.push(await timed(() => hashCheckpointLocal(dir, full.manifest, opts)));
    }

    const oursSums = Object.fromEntries(full.manifest.files.map((f) => [f.path, f.sha256]));
    const agree = (sums: Record<string, string>) => files.every((f) => sums[f] === oursSums[f]);
    const hashedBytes = full.manifest.files.reduce((n, f) => n + f.size, 0);
    const figures = (samples: Array<{ s: number }>) => {
      const s = median(samples.map((x) => x.s));
      const best = Math.min(...samples.map((x) => x.s));
      return { wallS: round(s), gbPerS: round(hashedBytes / 1e9 / s, 2), bestS: round(best), bestGbPerS: round(hashedBytes / 1e9 / best, 2), samplesS: samples.map((x) => round(x.s)) };
    };
    const fullS = median(ours.map((x) => x.s));
    const rediscoverS = median(rediscover.map((x) => x.s));

    console.log(
      JSON.stringify(
        {
          bench: "checkpoint-hash",
          machine: { cpus: nproc, cpuModel: os.cpus()[0]?.model ?? "unknown", python: execFileSync("python3", ["-c", "import sys, ssl; print(sys.version.split()[0], ssl.OPENSSL_VERSION)"], { encoding: "utf8" }).trim() },
          checkpoint: { files: files.length, bytes: hashedBytes, gib: round(hashedBytes / GiB, 3), generateS: round(generate.s), warmPageCacheS: round(warm.s) },
          runs,
          ours: {
            ...figures(ours),
            workers: full.stats.workers,
            scriptElapsedS: round(median(ours.map((x) => x.value.stats.elapsedS))),
            peakRssKiB: Math.max(...ours.map((x) => x.value.stats.peakRssKiB ?? 0)),
          },
          oursOneWorker: { ...figures(oneWorker), peakRssKiB: Math.max(...oneWorker.map((x) => x.value.stats.peakRssKiB ?? 0)) },
          sha256sumParallel: { ...figures(sha256sum), command: `xargs -0 -P ${nproc} -n 1 sha256sum`, agreesWithOurs: agree(sha256sum[0].value) },
          opensslParallel: { ...figures(openssl), command: `xargs -0 -P ${nproc} -n 1 openssl dgst -sha256 -r`, agreesWithOurs: agree(openssl[0].value) },
          rediscoveryUnchanged: {
            wallS: round(rediscoverS, 4),
            samplesS: rediscover.map((x) => round(x.s, 4)),
            scriptElapsedS: round(median(rediscover.map((x) => x.value.stats.elapsedS)), 4),
            rehashed: rediscover[0].value.rehashed.length,
            reused: rediscover[0].value.reused.length,
            bytesRead: rediscover[0].value.stats.bytesRead,
            speedupVsFullHash: round(fullS / rediscoverS, 1),
          },
          ratios: {
            oursVsOpenssl: round(fullS / median(openssl.map((x) => x.s)), 2),
            oursVsSha256sum: round(fullS / median(sha256sum.map((x) => x.s)), 2),
            allCoresVsOneWorker: round(median(oneWorker.map((x) => x.s)) / fullS, 2),
          },
        },
        null,
        2,
      ),
    );
  } finally {
    cleanup();
  }
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});

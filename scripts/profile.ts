/**
 * `npm run profile -- --fleet <fleet.json> ...` (or `--version`): narwhal-profile's three modes from this program
 * (lib/profiling): a live sweep into the fleet's `profiles.path` (`--only`, `--overwrite`, `--limits`,
 * sweep options, `--colocated` neighbour load), `--refit-samples PATH --out PATH`, and
 * `--merge PATH --merge PATH... --out PATH`. Prints `wrote N profile(s) to PATH`, `refitted N
 * profile(s) to PATH` or `merged N measured profiles to PATH`. Exit 0 done; 1 a measurement stopped;
 * 2 bad arguments, a bad fleet or output, or a selection matching no engine.
 * Without an engine contract, rows bind each engine's live process identity; a fleet with one is
 * profiled by the stack's Profile resources, which bind its verified attestations.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { profileHttp } from "../lib/profiling/engine-http";
import { documentBytes, samplesPath, storeDocument } from "../lib/profiling/store";
import { mergeStores } from "../lib/profiling/merge";
import { parseProfileArgs, USAGE, UsageError } from "../lib/profiling/cli-args";
import { ProfileError } from "../lib/profiling/errors";
import { readFleet, type ProfileFleet } from "../lib/profiling/fleet-file";
import { readLimits } from "../lib/profiling/limits";
import { refitSamples } from "../lib/profiling/refit";
import { runLive } from "../lib/profiling/live";
import { writeFresh } from "../lib/profiling/outputs";

const NAME = "profile";
/** One probe (health, tokenize, metrics), and one completion or decode cohort, unless --observation-timeout-s says otherwise. */
const PROBE_TIMEOUT_S = 30;
const REQUEST_TIMEOUT_S = 300;
/** Codes that mean the inputs were wrong rather than a measurement failing (a sweep the engine's limits leave too small is one, as for narwhal-profile). */
const INPUT_CODES = new Set(["NARWHAL_PROFILE_SELECTION", "NARWHAL_PROFILE_STORE", "NARWHAL_PROFILE_SWEEP", "NARWHAL_PROFILE_POINTS"]);

const meta = (mode: string) => ({ package: "narwhal-fleet", writer: "scripts/profile.ts", mode });
const say = (line: string) => process.stdout.write(`${line}\n`);

function readMaybe(file: string): Buffer | undefined {
  try {
    return fs.readFileSync(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}

function sameFile(a: string, b: string): boolean {
  if (path.resolve(a) === path.resolve(b)) return true;
  try {
    const [x, y] = [fs.statSync(a), fs.statSync(b)];
    return x.dev === y.dev && x.ino === y.ino;
  } catch {
    return false;
  }
}

async function main(argv: string[]): Promise<number> {
  if (argv.includes("--version")) {
    // As argparse's version action: printed before any other argument is checked.
    const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, "..", "package.json"), "utf8")) as { name: string; version: string };
    say(`${NAME} (${pkg.name}) ${pkg.version}`);
    return 0;
  }
  let cmd;
  try {
    cmd = parseProfileArgs(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`${USAGE}\n${NAME}: error: ${err.message}\n`);
    return 2;
  }
  let fleet: ProfileFleet;
  try {
    fleet = readFleet(JSON.parse(fs.readFileSync(cmd.fleet, "utf8")));
  } catch (err) {
    process.stderr.write(`${NAME}: load fleet ${cmd.fleet}: ${(err as Error).message}\n`);
    return 2;
  }
  if ([fleet.profilesPath, samplesPath(fleet.profilesPath)].some((p) => sameFile(p, cmd.fleet))) {
    process.stderr.write(`${USAGE}\n${NAME}: error: profile outputs must not replace the fleet config\n`);
    return 2;
  }
  const ids = fleet.engines.map((e) => e.iid);
  try {
    if (cmd.mode === "merge") {
      const sources = cmd.merge.map((p) => ({ path: p, storeBytes: readMaybe(p), samplesPath: samplesPath(p), samplesBytes: readMaybe(samplesPath(p)) }));
      const merged = mergeStores(sources, ids);
      await writeFresh(path.resolve(cmd.out), documentBytes(storeDocument(merged.rows, meta("merge"))), documentBytes(merged.record));
      say(`merged ${merged.count} measured profiles to ${cmd.out}`);
      return 0;
    }
    if (cmd.mode === "refit") {
      const text = fs.readFileSync(cmd.refitSamples, "utf8");
      let record: unknown;
      try {
        record = JSON.parse(text);
      } catch {
        throw new ProfileError("NARWHAL_PROFILE_STORE", `invalid profile samples: ${cmd.refitSamples}`);
      }
      const refitted = refitSamples(record, cmd.refitSamples, ids);
      refitted.lines.forEach(say);
      await writeFresh(path.resolve(cmd.out), documentBytes(storeDocument(refitted.rows, meta("refit"))), documentBytes(refitted.record));
      say(`refitted ${refitted.rows.length} profile(s) to ${cmd.out}`);
      return 0;
    }
    const apiKey = fleet.apiKeyEnv ? process.env[fleet.apiKeyEnv] : undefined;
    if (fleet.apiKeyEnv && !apiKey) throw new ProfileError("NARWHAL_PROFILE_STORE", `engine_api_key_env ${fleet.apiKeyEnv} is not set in the environment`);
    const limits = cmd.limits !== undefined ? readLimits(JSON.parse(fs.readFileSync(cmd.limits, "utf8")), cmd.limits, ids) : undefined;
    await runLive({
      fleet,
      only: cmd.only,
      overwrite: cmd.overwrite,
      sweep: cmd.sweep,
      ...(limits ? { limits } : {}),
      ...(cmd.colocated ? { colocated: cmd.colocated } : {}),
      clientFor: (e, connections) => profileHttp(e.url, apiKey, `engine ${e.iid} at ${e.url}`, connections),
      probeTimeoutS: cmd.observationTimeoutS ?? PROBE_TIMEOUT_S,
      requestTimeoutS: cmd.observationTimeoutS ?? REQUEST_TIMEOUT_S,
      meta: meta("live"),
      log: say,
    });
    return 0;
  } catch (err) {
    const e = err as Error & { code?: string };
    if (e.code === "NARWHAL_PROFILE_SELECTION" && e.message === "no matching instances") {
      process.stderr.write("no matching instances\n");
      return 2;
    }
    process.stderr.write(`${NAME}: profile fleet ${cmd.fleet}: ${e.message}\n`);
    return INPUT_CODES.has(e.code ?? "") || e.code === "ENOENT" || err instanceof SyntaxError ? 2 : 1;
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`${NAME}: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);

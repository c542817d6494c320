import { spawn } from "node:child_process";
import { watchProcessTree, type ByRole } from "./process-tree";

/** One CLI run: its wall time and the CPU time of the CLI and every process under it (plugins, Node). */
export interface CliRun {
  wallS: number;
  cpuS: number;
  /** Peak resident MiB of the largest process of each role under the run. */
  peakRssMiB: ByRole;
  /** CPU seconds by role, sampled (bench/scale/process-tree.ts): where `cpuS` went. */
  cpuByRoleS: ByRole;
}

/** A named bound for every CLI run the benchmarks make: a run that takes longer is stopped and fails. */
const CLI_RUN_TIMEOUT_MS = 15 * 60_000;

/**
 * Runs `pulumi <args>` in `cwd` under bash's `time`, which reads the CPU of every waited-for descendant
 * (the engine, the language host, the program's Node process, the provider hosts), so a figure counts
 * what the whole operation cost the machine, not only its wall time.
 */
export function runCli(args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env): Promise<CliRun> {
  const quoted = args.map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(" ");
  const script = `TIMEFORMAT='%R %U %S'; { time pulumi ${quoted} >/dev/null 2>"$NARWHAL_CLI_LOG"; } 2>&1`;
  const log = `/tmp/narwhal-bench-cli-${process.pid}.log`;
  return new Promise((resolve, reject) => {
    const child = spawn("bash", ["-c", script], { cwd, env: { ...env, NARWHAL_CLI_LOG: log }, stdio: ["ignore", "pipe", "pipe"] });
    const tree = watchProcessTree(child.pid!);
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => child.kill("SIGTERM"), CLI_RUN_TIMEOUT_MS);
    child.on("close", (code) => {
      clearTimeout(timer);
      const { peakRssMiB, cpuS: cpuByRoleS } = tree.stop();
      const m = /(\d+\.\d+) (\d+\.\d+) (\d+\.\d+)\s*$/.exec(out);
      if (code !== 0 || !m) {
        reject(new Error(`pulumi ${args.join(" ")} in ${cwd} failed (exit ${code}; CLI_RUN_TIMEOUT ${CLI_RUN_TIMEOUT_MS / 60_000} min); its output is in ${log}`));
        return;
      }
      resolve({ wallS: Number(m[1]), cpuS: Number((Number(m[2]) + Number(m[3])).toFixed(2)), peakRssMiB, cpuByRoleS });
    });
  });
}

export const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return Number((s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2).toFixed(2));
};

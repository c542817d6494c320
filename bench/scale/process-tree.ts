/**
 * Peak resident memory and CPU of the processes under one CLI run, by role: the program (Node running
 * the Pulumi program), the dynamic-provider hosts, and the rest (the CLI's engine, other plugins). Each
 * process's own high-water mark (`VmHWM`) and CPU ticks are read every quarter second while it lives, so
 * a process that exits between two samples loses at most its last quarter second of each.
 */
import * as fs from "node:fs";

export type ProcessRole = "program" | "providerHost" | "other";
export type ByRole = Record<ProcessRole, number>;

const SAMPLE_MS = 250;
/** USER_HZ: /proc reports CPU in ticks of 1/100 s on Linux. */
const TICKS_PER_S = 100;

function children(): Map<number, number[]> {
  const byParent = new Map<number, number[]>();
  for (const name of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // The command name in field 2 may hold spaces and parentheses: the parent pid follows its last ")".
      const stat = fs.readFileSync(`/proc/${name}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      byParent.set(ppid, [...(byParent.get(ppid) ?? []), Number(name)]);
    } catch {
      // gone since the listing
    }
  }
  return byParent;
}

function descendants(root: number): number[] {
  const byParent = children();
  const out: number[] = [];
  const queue = [root];
  while (queue.length) {
    const pid = queue.pop()!;
    out.push(pid);
    queue.push(...(byParent.get(pid) ?? []));
  }
  return out;
}

export function roleOf(cmdline: string): ProcessRole {
  if (cmdline.includes("@pulumi/pulumi/cmd/dynamic-provider")) return "providerHost";
  if (cmdline.includes("@pulumi/pulumi/cmd/run")) return "program";
  return "other";
}

/** MiB of `VmHWM`, CPU ticks (user + system) and the role of one process; undefined once it is gone. */
function sample(pid: number): { role: ProcessRole; mib: number; ticks: number } | undefined {
  try {
    const hwm = /^VmHWM:\s+(\d+) kB$/m.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
    if (!hwm) return undefined;
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields 14 and 15 (utime, stime), counted from the state field that follows the last ")".
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(fields[11]) + Number(fields[12]);
    return { role: roleOf(fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ")), mib: Number(hwm[1]) / 1024, ticks };
  } catch {
    return undefined;
  }
}

/**
 * Starts sampling the tree under `root`; `stop` returns the peak MiB per role (the largest single process
 * of each) and the CPU seconds per role (every process of each, as last seen).
 */
export function watchProcessTree(root: number): { stop: () => { peakRssMiB: ByRole; cpuS: ByRole } } {
  const peak: ByRole = { program: 0, providerHost: 0, other: 0 };
  const lastTicks = new Map<number, { role: ProcessRole; ticks: number }>();
  const tick = () => {
    for (const pid of descendants(root)) {
      const s = sample(pid);
      if (!s) continue;
      peak[s.role] = Math.max(peak[s.role], s.mib);
      lastTicks.set(pid, { role: s.role, ticks: s.ticks });
    }
  };
  tick();
  const timer = setInterval(tick, SAMPLE_MS);
  return {
    stop: () => {
      clearInterval(timer);
      tick();
      const cpu: ByRole = { program: 0, providerHost: 0, other: 0 };
      for (const { role, ticks } of lastTicks.values()) cpu[role] += ticks / TICKS_PER_S;
      const round = (r: ByRole, digits: number): ByRole => ({
        program: Number(r.program.toFixed(digits)),
        providerHost: Number(r.providerHost.toFixed(digits)),
        other: Number(r.other.toFixed(digits)),
      });
      return { peakRssMiB: round(peak, 0), cpuS: round(cpu, 2) };
    },
  };
}

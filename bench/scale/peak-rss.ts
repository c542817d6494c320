/**
 * Peak resident memory of the processes under one CLI run, by role: the program (Node running the
 * Pulumi program), the dynamic-provider hosts, and the rest (the CLI's engine, other plugins). Each
 * process's own high-water mark (`VmHWM`) is read every quarter second while it lives, so a process that
 * exits between two samples loses at most its last quarter second of growth.
 */
import * as fs from "node:fs";

export type RssRole = "program" | "providerHost" | "other";
export type PeakRss = Record<RssRole, number>;

const SAMPLE_MS = 250;

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

export function roleOf(cmdline: string): RssRole {
  if (cmdline.includes("@pulumi/pulumi/cmd/dynamic-provider")) return "providerHost";
  if (cmdline.includes("@pulumi/pulumi/cmd/run")) return "program";
  return "other";
}

/** MiB of `VmHWM` and the role of one process; undefined once it is gone. */
function sample(pid: number): { role: RssRole; mib: number } | undefined {
  try {
    const hwm = /^VmHWM:\s+(\d+) kB$/m.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
    if (!hwm) return undefined;
    return { role: roleOf(fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ")), mib: Number(hwm[1]) / 1024 };
  } catch {
    return undefined;
  }
}

/** Starts sampling the tree under `root`; `stop` returns the peak MiB per role (the largest single process of each). */
export function watchPeakRss(root: number): { stop: () => PeakRss } {
  const peak: PeakRss = { program: 0, providerHost: 0, other: 0 };
  const tick = () => {
    for (const pid of descendants(root)) {
      const s = sample(pid);
      if (s) peak[s.role] = Math.max(peak[s.role], s.mib);
    }
  };
  tick();
  const timer = setInterval(tick, SAMPLE_MS);
  return {
    stop: () => {
      clearInterval(timer);
      tick();
      return { program: Math.round(peak.program), providerHost: Math.round(peak.providerHost), other: Math.round(peak.other) };
    },
  };
}

/**
 * Where one process's CPU went, from a V8 `.cpuprofile` (bench/scale/cpu-profile-hook.js): self time
 * grouped by what owns the code (a package under node_modules, a folder of this project, Node's own
 * modules, V8's garbage collector and compiler), and the functions with the most self time.
 */
import * as fs from "node:fs";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface CpuWhere {
  /** Sampled seconds, idle excluded. */
  busyS: number;
  byOwner: Array<{ owner: string; s: number }>;
  topFunctions: Array<{ fn: string; s: number }>;
}

/** `node_modules/@pulumi/pulumi/...` -> `@pulumi/pulumi`; a project file -> its top folder; Node's own -> `node:internal`. */
export function ownerOf(url: string, functionName: string, root: string): string {
  if (url === "") return functionName.startsWith("(") ? functionName : "(native)";
  const nm = url.lastIndexOf("node_modules/");
  if (nm >= 0) {
    const parts = url.slice(nm + "node_modules/".length).split("/");
    return parts[0].startsWith("@") ? `${parts[0]}/${parts[1]}` : parts[0];
  }
  if (url.startsWith("node:")) return "node:internal";
  const file = url.replace(/^file:\/\//, "");
  if (file.startsWith(root)) return file.slice(root.length).replace(/^\//, "").split("/")[0] + "/";
  return "(other)";
}

export function cpuWhere(file: string, root: string, top = 15): CpuWhere {
  const profile = JSON.parse(fs.readFileSync(file, "utf8")) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  // timeDeltas[i] is the time before sample i: it belongs to the sample that ends it.
  profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i + 1] ?? 0)));
  const owners = new Map<string, number>();
  const fns = new Map<string, number>();
  let busy = 0;
  for (const [id, us] of selfUs) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    if (functionName === "(idle)") continue;
    busy += us;
    const owner = ownerOf(url, functionName, root);
    owners.set(owner, (owners.get(owner) ?? 0) + us);
    const where = url ? `${url.replace(/^file:\/\//, "").replace(root + "/", "")}:${lineNumber + 1}` : "";
    const fn = `${functionName || "(anonymous)"} ${where}`.trim();
    fns.set(fn, (fns.get(fn) ?? 0) + us);
  }
  const ranked = (m: Map<string, number>, n: number) =>
    [...m.entries()].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, us]) => [k, Number((us / 1e6).toFixed(2))] as const);
  return {
    busyS: Number((busy / 1e6).toFixed(2)),
    byOwner: ranked(owners, 12).map(([owner, s]) => ({ owner, s })),
    topFunctions: ranked(fns, top).map(([fn, s]) => ({ fn, s })),
  };
}

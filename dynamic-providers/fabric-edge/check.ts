/** Input checks of FabricEdge: every problem named by field and edge, before any host is touched. */
import { INTERFACE_PATTERN, ipProblem } from "../../lib/config/formats";
import { UNKNOWN } from "../diff";
import type { FabricEdgeInputs } from "./types";

/** True when a value, or anything inside it, is only known after apply (preview). */
export function containsUnknown(v: unknown): boolean {
  if (v === UNKNOWN) return true;
  return !!v && typeof v === "object" && Object.values(v as Record<string, unknown>).some(containsUnknown);
}

const positive = (v: unknown): boolean => typeof v === "number" && Number.isFinite(v) && v > 0;
const wholeIn = (v: unknown, lo: number, hi: number): boolean => Number.isSafeInteger(v) && (v as number) >= lo && (v as number) <= hi;

/** `[property, reason]` per problem; values only known after apply (preview) are not judged. */
export function edgeInputProblems(i: FabricEdgeInputs): Array<[keyof FabricEdgeInputs, string]> {
  const out: Array<[keyof FabricEdgeInputs, string]> = [];
  const judge = <K extends keyof FabricEdgeInputs>(k: K, check: (v: FabricEdgeInputs[K]) => string | undefined) => {
    if (containsUnknown(i[k])) return;
    const problem = check(i[k]);
    if (problem) out.push([k, problem]);
  };
  for (const side of ["source", "destination"] as const) {
    judge(side, (e) => {
      const p: string[] = [];
      if (!e || typeof e.alias !== "string" || e.alias === "") p.push("alias is empty");
      if (typeof e?.sshHost !== "string" || e.sshHost === "") p.push("sshHost is empty");
      if (typeof e?.hostKey !== "string" || e.hostKey === "") p.push("hostKey is empty (discovery records it)");
      if (typeof e?.fabricInterface !== "string" || !INTERFACE_PATTERN.test(e.fabricInterface)) p.push(`fabricInterface ${JSON.stringify(e?.fabricInterface)} is not an interface name`);
      const ip = typeof e?.fabricAddress === "string" ? ipProblem(e.fabricAddress) : "missing";
      if (ip) p.push(`fabricAddress ${JSON.stringify(e?.fabricAddress)}: ${ip}`);
      return p.length ? `${side} ${p.join("; ")}` : undefined;
    });
    judge(`${side}Login`, (l) =>
      !l || typeof l.host !== "string" || l.host === "" || !wholeIn(l.port, 1, 65535) || typeof l.user !== "string" || l.user === "" || !positive(l.connectTimeoutS) || !wholeIn(l.maxSessions, 1, 64)
        ? `${side}Login needs host, port (1-65535), user, connectTimeoutS (> 0) and maxSessions (1-64)`
        : undefined,
    );
  }
  judge("edgeId", (id) => {
    if (containsUnknown(i.source) || containsUnknown(i.destination)) return undefined;
    const expected = `${i.source?.alias}->${i.destination?.alias}`;
    if (id !== expected) return `edgeId ${JSON.stringify(id)} must be "${expected}"`;
    return i.source.alias === i.destination.alias ? `edge ${id} joins a host to itself: traffic inside one host is not a fabric edge` : undefined;
  });
  judge("transport", (t) => (t === "tcp" || t === "ucx_rdma" ? undefined : `transport ${JSON.stringify(t)} (tcp or ucx_rdma)`));
  judge("tool", (t) =>
    wholeIn(t?.durationS, 1, 3600) && wholeIn(t?.streams, 1, 128) ? undefined : `tool needs durationS (whole seconds, 1-3600) and streams (1-128), got ${JSON.stringify(t)}`,
  );
  judge("iperfPort", (p) => (wholeIn(p, 1, 65535) ? undefined : `iperfPort ${JSON.stringify(p)} (1-65535)`));
  judge("requiredGbps", (g) => (typeof g === "number" && !Number.isNaN(g) ? undefined : `requiredGbps ${JSON.stringify(g)} is not a number`));
  judge("lockWaitS", (w) => (positive(w) ? undefined : `lockWaitS ${JSON.stringify(w)} (seconds, above 0)`));
  return out;
}

/** Simulated hosts as the two ends of a fabric edge, for the fabric edge provider tests. */
import * as fs from "node:fs";
import type { FabricEdgeInputs } from "../../../dynamic-providers/fabric-edge/schema";
import type { SimHost } from "../../../sim/hosts";

export function edgeEnd(h: SimHost) {
  return { alias: h.alias, sshHost: h.address, hostKey: h.hostKey, fabricInterface: h.fabricInterface, fabricAddress: h.address };
}

export function edgeLogin(h: SimHost) {
  return { host: h.address, port: h.sshPort, user: h.user, connectTimeoutS: 20, maxSessions: 4 };
}

/** What an edge from `s` to `d` holds whatever its transport: the ends, their logins (one key), a test budget, no engines on either host. */
export function edgeBetween(s: SimHost, d: SimHost, stack: string) {
  const key = fs.readFileSync(s.privateKeyPath, "utf8");
  return {
    stack,
    edgeId: `${s.alias}->${d.alias}`,
    source: edgeEnd(s),
    destination: edgeEnd(d),
    sourceLogin: edgeLogin(s),
    destinationLogin: edgeLogin(d),
    sourcePrivateKey: key,
    destinationPrivateKey: key,
    budget: { governingEngine: "e1", budgetKey: "g1", formula: "test budget" },
    lockWaitS: 60,
    engines: [],
  } satisfies Partial<FabricEdgeInputs>;
}

/** A simulated host as either end of a fabric edge, and its login, for the fabric edge provider tests. */
import type { SimHost } from "../../../sim/hosts";

export function edgeEnd(h: SimHost) {
  return { alias: h.alias, sshHost: h.address, hostKey: h.hostKey, fabricInterface: h.fabricInterface, fabricAddress: h.address };
}

export function edgeLogin(h: SimHost) {
  return { host: h.address, port: h.sshPort, user: h.user, connectTimeoutS: 20, maxSessions: 4 };
}

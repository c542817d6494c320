/** Which TLS root settings a running process got (lib/trust-store.ts), read from its /proc environ. */
import * as fs from "node:fs";

/** The process's non-empty `SSL_CERT_FILE` and `SSL_CERT_DIR` assignments. */
export function trustStoreVariables(pid: number): string[] {
  return fs.readFileSync(`/proc/${pid}/environ`, "utf8").split("\0").filter((v) => /^SSL_CERT_(FILE|DIR)=./.test(v));
}

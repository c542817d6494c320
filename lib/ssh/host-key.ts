import { createHash } from "node:crypto";
import { shq } from "../shell";

/** A server's public host key, as OpenSSH prints it (`ssh-ed25519 AAAA…`) and with its fingerprint. */
export interface HostKey {
  /** `<type> <base64 blob>`, the form `known_hosts` and `hostKey` config take. */
  readonly line: string;
  /** `SHA256:<base64, no padding>`, the form `ssh-keygen -lf` and `ssh` print. */
  readonly fingerprint: string;
}

/** Builds the key line and fingerprint from the raw key blob an SSH server presents. */
export function hostKeyFromBlob(blob: Buffer): HostKey {
  // The blob starts with the key type as an SSH string: a 4-byte length, then the name.
  const typeLength = blob.readUInt32BE(0);
  const type = blob.subarray(4, 4 + typeLength).toString("ascii");
  return { line: `${type} ${blob.toString("base64")}`, fingerprint: fingerprintOfBlob(blob) };
}

/** Parses a pinned key line (`ssh-ed25519 AAAA… [comment]`); throws on anything else. */
export function parseHostKeyLine(line: string): HostKey {
  const [type, data] = line.trim().split(/\s+/);
  const blob = Buffer.from(data ?? "", "base64");
  if (!type || !data || blob.length < 8 || hostKeyFromBlob(blob).line.split(" ")[0] !== type) {
    throw new Error(`not an SSH public key line: "${line.slice(0, 40)}"; expected e.g. "ssh-ed25519 AAAAC3Nz…"`);
  }
  return { line: `${type} ${data}`, fingerprint: fingerprintOfBlob(blob) };
}

export function fingerprintOfBlob(blob: Buffer): string {
  return "SHA256:" + createHash("sha256").update(blob).digest("base64").replace(/=+$/, "");
}

/** Where the key to pin goes: the host's place in `hosts` and, when the config holds the list as JSON text, that list. */
export interface PinFix {
  presentedLine: string;
  index?: number;
  listAsText?: unknown[];
}

/**
 * The message every host-key refusal uses, so operators see the same words from every resource. With the
 * presented key line it ends with the exact command that pins it; with the host's index in `hosts`, the path.
 */
export function hostKeyMismatchMessage(alias: string, pinned: string, presented: string, fix?: PinFix): string {
  const changed = `host ${alias}: the SSH host key changed (pinned ${pinned}, presented ${presented}); nothing was run on it. `;
  if (!fix) return changed + `If the host was legitimately reinstalled, update hosts[].hostKey (or clear the recorded key) and run again.`;
  return changed + `If the host was legitimately re-keyed, pin its new key: ${pinCommand(alias, fix)}, then pulumi preview --refresh and pulumi up --refresh.`;
}

/**
 * `pulumi config set --path 'hosts[i].hostKey' '<key>'`, or, for a list held as JSON text (which a `--path`
 * set would replace with a list of the key alone), the same text with the key put in.
 */
function pinCommand(alias: string, fix: PinFix): string {
  const { index, listAsText } = fix;
  if (index !== undefined && listAsText && typeof listAsText[index] === "object" && listAsText[index] !== null) {
    const pinnedList = listAsText.map((h, i) => (i === index ? { ...(h as object), hostKey: fix.presentedLine } : h));
    return `pulumi config set hosts ${shq(JSON.stringify(pinnedList))} (hosts is stored as JSON text, which a --path set would replace)`;
  }
  const at = index === undefined ? `hosts[<index of ${alias}>].hostKey` : `hosts[${index}].hostKey`;
  return `pulumi config set --path ${shq(at)} ${shq(fix.presentedLine)}`;
}

/**
 * Whether the key pinned in config is the key a record holds, compared as keys (a pin may carry a comment).
 * A pin that does not parse never agrees, so it is taken as a new key.
 */
export function pinAgrees(pinned: string, recorded: string | undefined): boolean {
  if (recorded === undefined) return false;
  try {
    return parseHostKeyLine(pinned).line === parseHostKeyLine(recorded).line;
  } catch {
    return false;
  }
}

/**
 * A login as a diff should see it: with the host key the old state holds. A host key says how a login is
 * verified, never what a measurement was taken against; a host's key only changes once the operator pins the
 * new one, and every login prefers that pin (./configured-hosts.ts), so carrying it into a resource's inputs
 * would only make a preview announce a change (and, while the key is unknown, re-derive outputs) that
 * measures nothing. The key reaches the state with the next step that changes the resource for a reason.
 */
export function withHostKeyOf<L>(login: L, old: unknown): L {
  if (typeof login !== "object" || login === null || typeof old !== "object" || old === null) return login;
  const held = (old as { hostKey?: unknown }).hostKey;
  const { hostKey: _new, ...rest } = login as L & { hostKey?: unknown };
  return (held === undefined ? rest : { ...rest, hostKey: held }) as L;
}

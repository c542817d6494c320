/**
 * String formats of the fleet config, as pure checks: each returns the problem in words, or undefined
 * when the value is fine. The words follow the house style: what was found, what is allowed, the fix.
 */
import { isIP } from "node:net";
import { show } from "./describe";

/** Host alias: short, lowercase, safe in resource names, file names and URLs. */
export const ALIAS_PATTERN = /^[a-z][a-z0-9-]{0,30}$/;
export const ALIAS_RULE = 'a lowercase letter followed by up to 30 lowercase letters, digits or "-" (e.g. "gpu-a")';

/** Narwhal engine iid. */
export const ENGINE_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;
export const ENGINE_ID_RULE = 'a letter or digit followed by up to 62 letters, digits, "_", "." or "-" (e.g. "e1")';

const USER = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}$/;
const HOSTNAME = /^[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,252})$/;

/** A login split into its parts; `port` only in jump destinations. */
export interface Destination {
  readonly user?: string;
  readonly host: string;
  readonly port?: number;
}

type Parsed<T> = { ok: true; value: T } | { ok: false; problem: string };

/**
 * Parses `user@host`, `host`, an ssh_config alias, or (with `withPort`) `user@host:port` and
 * `user@[v6]:port`. Refuses anything ssh could read as an option (a leading `-`) or that holds spaces.
 */
export function parseDestination(text: string, withPort: boolean): Parsed<Destination> {
  const fail = (why: string): Parsed<Destination> => ({ ok: false, problem: `found ${show(text)}: ${why}` });
  if (text === "") return fail("it is empty");
  if (/[\s\x00-\x1f]/.test(text)) return fail("it contains whitespace or control characters");
  if (text.startsWith("-")) return fail('it starts with "-", which ssh would read as an option');
  const parts = text.split("@");
  if (parts.length > 2) return fail('it contains more than one "@"');
  const [user, rest] = parts.length === 2 ? [parts[0], parts[1]] : [undefined, parts[0]];
  if (user !== undefined && !USER.test(user)) return fail(`the user ${show(user)} is not a valid login name`);

  let host = rest;
  let portText: string | undefined;
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(rest);
  if (bracketed) {
    host = bracketed[1]!;
    portText = bracketed[2];
    if (isIP(host) !== 6) return fail(`${show(host)} in brackets is not an IPv6 address`);
  } else if (isIP(rest) !== 6) {
    const pieces = rest.split(":");
    if (pieces.length > 2) return fail(`${show(rest)} is neither a host name nor an IP address`);
    [host, portText] = [pieces[0], pieces[1]];
    if (!HOSTNAME.test(host)) return fail(`${show(host)} is not a host name, IP address or ssh_config alias`);
  }
  if (portText !== undefined) {
    if (!withPort) return fail("it includes a port; put the port in the host's port key instead");
    const port = Number(portText);
    if (!/^\d+$/.test(portText) || port < 1 || port > 65535) return fail(`the port ${show(portText)} is not 1 to 65535`);
    return { ok: true, value: { user, host, port } };
  }
  return { ok: true, value: { user, host } };
}

/** Host key types OpenSSH servers present. */
export const HOST_KEY_TYPES = ["ssh-ed25519", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521", "ssh-rsa"];
const HOST_KEY_RULE =
  '"<type> <base64>", type ssh-ed25519, ecdsa-sha2-nistp256/384/521 or ssh-rsa ' +
  "(the host's /etc/ssh/ssh_host_*_key.pub, or an `ssh-keyscan` line without its host name)";

/** Checks a pinned host key line; the key data must really encode a key of the named type. */
export function hostKeyProblem(text: string): string | undefined {
  // Never echo something that looks like a private key back into logs.
  if (/PRIVATE KEY/.test(text)) {
    return "looks like a private key; never put a private key in plain config: keep it in the sshPrivateKey secret and pin the host's public key here";
  }
  const fields = text.trim().split(/\s+/);
  const [type, data] = fields;
  if (fields.length >= 3 && HOST_KEY_TYPES.includes(fields[1]) && !HOST_KEY_TYPES.includes(type)) {
    return `found ${show(text)}: starts with the host name ${show(type)}; drop it and keep ${HOST_KEY_RULE}`;
  }
  if (!type || !data) return `found ${show(text)}; expected ${HOST_KEY_RULE}`;
  if (!HOST_KEY_TYPES.includes(type)) return `found a key of type ${show(type)}; expected ${HOST_KEY_RULE}`;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(data) || data.length % 4 !== 0) {
    return `the key data of ${show(text)} is not base64; expected ${HOST_KEY_RULE}`;
  }
  // The blob starts with its own type as an SSH string: a 4-byte length, then the name.
  const blob = Buffer.from(data, "base64");
  const length = blob.length >= 4 ? blob.readUInt32BE(0) : -1;
  const embedded = length > 0 && 4 + length <= blob.length ? blob.subarray(4, 4 + length).toString("latin1") : undefined;
  if (embedded !== type) {
    return `the key data of ${show(text)} does not hold an ${type} key; copy the whole line from the host's /etc/ssh/ssh_host_*_key.pub`;
  }
  return undefined;
}

/** `<type> <base64>`: the comment dropped, the form known_hosts and the SSH client compare. */
export function normalizeHostKey(text: string): string {
  const [type, data] = text.trim().split(/\s+/);
  return `${type} ${data}`;
}

const IMAGE_ID = /^sha256:[0-9a-f]{64}$/;
const IMAGE_DIGEST = /^[A-Za-z0-9][A-Za-z0-9._\-/:]*@sha256:[0-9a-f]{64}$/;
export const IMAGE_RULE = "pin an image ID (sha256:…) or a digest (repo@sha256:…)";

/** Only an image ID or a registry digest names the same bytes tomorrow; a tag can move. */
export function imageProblem(text: string): string | undefined {
  if (IMAGE_ID.test(text) || IMAGE_DIGEST.test(text)) return undefined;
  if (text.trim() === "" || /\s/.test(text)) return `found ${show(text)}; ${IMAGE_RULE}`;
  if (text.includes("sha256:")) {
    return `${show(text)} has a malformed digest: expected 64 lowercase hex digits after "sha256:"; ${IMAGE_RULE}`;
  }
  return `${show(text)} is a mutable tag; ${IMAGE_RULE}`;
}

/** `"lo-hi"` as numbers, or undefined when malformed. */
export function parsePortRange(text: string): { lo: number; hi: number } | undefined {
  const m = /^(\d{1,5})-(\d{1,5})$/.exec(text);
  if (!m) return undefined;
  const lo = Number(m[1]);
  const hi = Number(m[2]);
  return lo >= 1 && hi <= 65535 && lo < hi ? { lo, hi } : undefined;
}

export function portRangeProblem(text: string): string | undefined {
  return parsePortRange(text)
    ? undefined
    : `found ${show(text)}; expected "<lo>-<hi>" with 1 ≤ lo < hi ≤ 65535 (e.g. "6300-6500")`;
}

/** Absolute POSIX path without `..` segments (it is used on remote hosts and in container mounts). */
export function absolutePathProblem(text: string, example: string): string | undefined {
  if (text.startsWith("/") && !/[\x00-\x1f]/.test(text) && !text.split("/").includes("..")) return undefined;
  return `found ${show(text)}; expected an absolute path without ".." (e.g. "${example}")`;
}

export function ipProblem(text: string): string | undefined {
  return isIP(text) ? undefined : `found ${show(text)}; expected an IPv4 or IPv6 address such as "10.0.0.5" or "fd00::5"`;
}

/** A URL host: host name or IP address, IPv6 written without brackets (the URL builder adds them). */
export function urlHostProblem(text: string): string | undefined {
  if (isIP(text) || /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,62})(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}))*$/.test(text)) return undefined;
  const hint = /^\[.*\]$/.test(text) ? "; write an IPv6 address without brackets" : "";
  return `found ${show(text)}; expected a host name or IP address (no scheme, port or path)${hint}`;
}

/** Linux interface names: at most 15 characters, no "/" or whitespace. */
export const INTERFACE_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,14}$/;
export const INTERFACE_RULE = 'a network interface name of up to 15 characters (e.g. "eth1", "fab0")';

export const HCA_PATTERN = /^[A-Za-z0-9_.-]+:[1-9][0-9]*$/;
export const HCA_RULE = 'an RDMA device and port as "<hca>:<port>" (e.g. "mlx5_0:1")';

export const DEVICE_PATTERN = /^\/dev\/[A-Za-z0-9_.\-/]+$/;
export const DEVICE_RULE = 'a device path under /dev (e.g. "/dev/infiniband/uverbs0")';

export const ENV_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;
export const ENV_NAME_RULE = 'an environment variable name (letters, digits and "_", not starting with a digit)';

/** Hugging Face repository id (`org/name`) or a bare name. */
export const HF_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]*(?:\/[A-Za-z0-9][A-Za-z0-9._-]*)?$/;

export const SHA256_PATTERN = /^[0-9a-f]{64}$/;
export const VERSION_PATTERN = /^\d+(?:\.\d+){1,3}(?:(?:a|b|rc|\.post|\.dev)\d+)?$/;

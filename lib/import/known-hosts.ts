/**
 * Host key pins from an OpenSSH known_hosts file (the runbook's `NARWHAL_SSH_KNOWN_HOSTS`): plain
 * `host[,host...] <type> <base64>` lines and `[host]:port` entries. Hashed names (`|1|...`) cannot be
 * matched without trying every candidate, so hosts only listed that way are left to first contact.
 */
import { HOST_KEY_TYPES } from "../config/formats";

export type KnownHostLookup = (host: string, port: number) => string | undefined;

export function knownHostLookup(text: string): KnownHostLookup {
  const keys = new Map<string, string>();
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (!line || line.startsWith("#") || line.startsWith("@")) continue;
    const [names, type, key] = line.split(/\s+/);
    if (!names || !type || !key || !HOST_KEY_TYPES.includes(type)) continue;
    for (const name of names.split(",")) {
      if (name.startsWith("|")) continue;
      const bracketed = /^\[([^\]]+)\]:(\d+)$/.exec(name);
      const id = bracketed ? `${bracketed[1]}:${bracketed[2]}` : `${name}:22`;
      if (!keys.has(id)) keys.set(id, `${type} ${key}`);
    }
  }
  return (host, port) => keys.get(`${host}:${port}`);
}

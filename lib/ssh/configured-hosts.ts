/**
 * The hosts as the stack's config names them now: each alias's index in `hosts` and the key it pins.
 *
 * A refresh reads every resource with the inputs of its last `up`, which carry the key pinned then. After
 * an operator pins a host's new key (`pulumi config set --path 'hosts[i].hostKey' …`), those old inputs
 * would refuse the host for good; the pin in the config as it is now is the operator's latest word, so a
 * login prefers it. The provider process fills this in from the stack's config file (../../dynamic-providers/shim.ts).
 */
export interface ConfiguredHost {
  /** Position in `hosts`, for the `pulumi config set --path 'hosts[<index>].hostKey'` a message gives. */
  readonly index: number;
  /** The key line pinned in the config now, if any. */
  readonly hostKey?: string;
}

let configured = new Map<string, ConfiguredHost>();

/** Replaces what is known from the raw `narwhal-fleet:hosts` list; entries without a string alias are skipped. */
export function setConfiguredHosts(hosts: unknown): void {
  const next = new Map<string, ConfiguredHost>();
  if (Array.isArray(hosts)) {
    hosts.forEach((h: unknown, index) => {
      const { alias, hostKey } = (typeof h === "object" && h !== null ? h : {}) as { alias?: unknown; hostKey?: unknown };
      if (typeof alias === "string") next.set(alias, { index, ...(typeof hostKey === "string" && hostKey.trim() ? { hostKey: hostKey.trim() } : {}) });
    });
  }
  configured = next;
}

/** The host with this alias in the config as it is now, when known. */
export function configuredHost(alias: string): ConfiguredHost | undefined {
  return configured.get(alias);
}

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
  /**
   * The whole list, when the config holds it as one JSON text (`pulumi config set hosts '[…]'`): a
   * `--path` set would replace that text with a list holding only the key, so a pin rewrites the text.
   */
  readonly listAsText?: unknown[];
}

let configured = new Map<string, ConfiguredHost>();

/**
 * Replaces what is known from the raw `narwhal-fleet:hosts` value: a list, or the JSON text of one (the
 * program reads both alike); entries without a string alias are skipped.
 */
export function setConfiguredHosts(raw: unknown): void {
  const listAsText = typeof raw === "string" ? parsedList(raw) : undefined;
  const hosts = listAsText ?? raw;
  const next = new Map<string, ConfiguredHost>();
  if (Array.isArray(hosts)) {
    hosts.forEach((h: unknown, index) => {
      const { alias, hostKey } = (typeof h === "object" && h !== null ? h : {}) as { alias?: unknown; hostKey?: unknown };
      if (typeof alias !== "string") return;
      next.set(alias, { index, ...(typeof hostKey === "string" && hostKey.trim() ? { hostKey: hostKey.trim() } : {}), ...(listAsText ? { listAsText } : {}) });
    });
  }
  configured = next;
}

function parsedList(text: string): unknown[] | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return Array.isArray(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** The host with this alias in the config as it is now, when known. */
export function configuredHost(alias: string): ConfiguredHost | undefined {
  return configured.get(alias);
}

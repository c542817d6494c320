/**
 * The fleet document as other stacks may see it: each engine's private address (in `url` and
 * `attestation_url`) replaced by its host's alias, ports and paths kept. The document holds no
 * credential (the engine API key is named by its environment variable only).
 */
export function sanitisedFleetDocument(document: Record<string, unknown>, hostOf: Readonly<Record<string, string>>): Record<string, unknown> {
  const engines = (document.engines as Array<Record<string, unknown>> | undefined) ?? [];
  const alias = (url: unknown, iid: string, field: string): unknown => {
    if (typeof url !== "string") return url;
    const host = hostOf[iid];
    if (!host) throw new Error(`sanitised fleet document: engine ${iid} has no host alias`);
    const u = new URL(url);
    return `${u.protocol}//${host}${u.port ? `:${u.port}` : ""}${u.pathname === "/" && !url.endsWith("/") ? "" : u.pathname}`.replace(/^$/, field);
  };
  return {
    ...document,
    engines: engines.map((e) => {
      const iid = String(e.iid);
      return { ...e, url: alias(e.url, iid, "url"), ...(e.attestation_url !== undefined ? { attestation_url: alias(e.attestation_url, iid, "attestation_url") } : {}) };
    }),
  };
}

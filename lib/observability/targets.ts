/**
 * Prometheus file-based service discovery, generated from the fleet document as Narwhal's own
 * `scrape_targets` does (narwhal.observability.targets): one group per engine with its id as `iid`,
 * plus the engine's initial role; the router is a target of its own job.
 */
export interface TargetGroup {
  readonly targets: string[];
  readonly labels: Record<string, string>;
}

export interface DocumentEngine {
  iid: string;
  url: string;
  role?: string;
}

/** `host:port` of an http(s) URL, credentials dropped, IPv6 kept in brackets. */
function hostPort(url: string, field: string): { hostPort: string; scheme: string; path: string } {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new Error(`${field}: ${JSON.stringify(url)} is not a URL`);
  }
  const port = u.port || (u.protocol === "https:" ? "443" : "80");
  return { hostPort: `${u.hostname}:${port}`, scheme: u.protocol.replace(/:$/, ""), path: u.pathname.replace(/\/+$/, "") };
}

export function engineTargets(document: Record<string, unknown>): TargetGroup[] {
  const engines = document.engines as DocumentEngine[] | undefined;
  if (!Array.isArray(engines) || engines.length === 0) throw new Error("fleet document: engines is missing or empty; no scrape targets");
  return engines.map((e, i) => {
    const at = hostPort(e.url, `fleet document engines[${i}].url`);
    return {
      targets: [at.hostPort],
      labels: { iid: e.iid, role: e.role ?? "decode", __scheme__: at.scheme, __metrics_path__: `${at.path}/metrics` },
    };
  });
}

export function routerTargets(routerLocalUrl: string): TargetGroup[] {
  const at = hostPort(routerLocalUrl, "router URL");
  return [{ targets: [at.hostPort], labels: { __scheme__: at.scheme, __metrics_path__: `${at.path}/metrics` } }];
}

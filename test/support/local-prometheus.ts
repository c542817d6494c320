import type { PrometheusRunOptions } from "../../lib/observability/scripts";

/** Debian's Prometheus run natively by the project's scripts on this machine, listening on 127.0.0.1:`port`. */
export function localPrometheus(dir: string, port: number, extra: Pick<PrometheusRunOptions, "configDigest"> & Partial<PrometheusRunOptions>): PrometheusRunOptions {
  return {
    runtime: "native",
    dir,
    command: "prometheus",
    image: "",
    containerName: "",
    bindAddress: "127.0.0.1",
    port,
    localUrl: `http://127.0.0.1:${port}`,
    startTimeoutS: 60,
    stopTimeoutS: 10,
    ...extra,
  };
}

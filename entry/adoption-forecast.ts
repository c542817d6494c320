/**
 * The preview's adoption forecast, run by the program's entry after the components are built: the reads
 * (lib/adoption/preview-reads.ts) are I/O, which no component does. Its lines are logged on the Fleet.
 */
import * as pulumi from "@pulumi/pulumi";
import type { FleetSpec } from "../lib/config/types";
import { forecastScope, formatForecast, mayForecast } from "../lib/adoption/forecast";
import type { ForecastHost } from "../lib/adoption/preview-reads";
import type { HostParts } from "../components/discovery";
import { recordedOutputs } from "./recorded-outputs";

/** What the stack's last deployment recorded: the engines of its `engines` output, and each host's fabric address from its `hosts` output. */
async function recorded(): Promise<{ engineIds: ReadonlySet<string>; fabricAddresses: ReadonlyMap<string, string> }> {
  const outputs = await recordedOutputs();
  const record = (v: unknown) => (typeof v === "object" && v !== null ? (v as Record<string, unknown>) : {});
  const addresses = Object.entries(record(outputs.hosts)).flatMap(([alias, h]) => {
    const address = record(h).fabricAddress;
    return typeof address === "string" ? [[alias, address] as const] : [];
  });
  return { engineIds: new Set(Object.keys(record(outputs.engines))), fabricAddresses: new Map(addresses) };
}

/**
 * At preview only: prints which runbook engines, profiles and calibration the next `up` would keep, and
 * which it will replace or measure, and why (lib/adoption/forecast.ts). It speaks only of engines the
 * stack does not record yet (forecastScope); once an up has brought them under the program, later
 * previews read nothing. The reads are read-only and go only to the hosts of engines with a runbookRun
 * whose keys the config pins; the preview never fails on them.
 */
export function logAdoptionForecast(spec: FleetSpec, discovered: ReadonlyMap<string, HostParts>, parent: pulumi.Resource): void {
  if (!pulumi.runtime.isDryRun() || !mayForecast(spec)) return;
  const hosts = spec.hosts.map((h) => ({ spec: h, login: discovered.get(h.alias)!.login, connection: discovered.get(h.alias)!.connection }));
  // The reads are not Pulumi resources: keep the program alive until their lines are logged (each read
  // is bounded), and should the credentials never resolve, not past the connect timeout.
  const done = pulumi.runtime.rpcKeepAlive();
  const unresolved = setTimeout(done, (spec.ssh.connectTimeoutS + 5) * 1000);
  pulumi.all(hosts.map((h) => pulumi.all([h.connection.privateKey, h.connection.password]))).apply(async (creds) => {
    clearTimeout(unresolved);
    try {
      const last = await recorded();
      const scope = forecastScope(spec, last.engineIds);
      if (!scope) return;
      const read = new Map(
        hosts.map((h, i): [string, ForecastHost] => [h.spec.alias, { spec: h.spec, login: h.login, privateKey: creds[i][0], password: creds[i][1], recordedFabricAddress: last.fabricAddresses.get(h.spec.alias) }]),
      );
      // Loaded here: its SSH client (ssh2) is needed only by a preview that reads runbook hosts.
      const { readForecast } = require("../lib/adoption/preview-reads") as typeof import("../lib/adoption/preview-reads");
      for (const line of formatForecast(await readForecast(spec, scope, read))) await pulumi.log.info(line, parent);
    } catch (err) {
      await pulumi.log.warn(`adoption forecast: not made: ${(err as Error).message}`, parent);
    } finally {
      done();
    }
  });
}

import { launchRecord, type LaunchRecord } from "../launch/plan";

/**
 * An engine's launch.json: the rendered plan (argv, environment without secrets, endpoint, TP, plan
 * hash), byte for byte as the native runtime writes it into the engine's run folder on the host
 * (`printf '%s\n' <plan JSON>`), so the evidence copy and the host's file have the same SHA-256.
 */
export function launchJsonText(plan: LaunchRecord): string {
  return `${JSON.stringify(launchRecord(plan))}\n`;
}

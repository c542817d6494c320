/**
 * A launch directory as the runbook's launcher (narwhal-inference `launch_engine prepare/check/start`)
 * leaves it: launch.json in its own shape (`python3 -m vllm.entrypoints.openai.api_server --model …`,
 * JSON written by Python's json.dumps), checked.json binding launch.json's SHA-256, and the process or
 * container record. Built from one of this program's plans so a test can make it equal or differ.
 */
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import type { LaunchPlan } from "../../../lib/launch/plan";
import { servingFlags, type RunbookSurvey } from "../../../lib/launch/runbook";

/** Python's json.dumps spacing, which the launcher's records use. */
function pyJson(v: unknown): string {
  return JSON.stringify(v).replace(/","/g, '", "').replace(/":/g, '": ').replace(/,\{/g, ", {").replace(/\],/g, "], ");
}

export interface RunbookPlanOptions {
  readonly backend?: "native" | "container";
  readonly image?: string;
  /** Flag values to change, e.g. {"--max-num-seqs": "16"}. */
  readonly flags?: Record<string, string>;
  /** Where the launch's attestation sidecar listens (NARWHAL_ATTEST_PORT); 8200 unless given. */
  readonly attestationPort?: number;
}

/** The launcher's launch.json object for the same serving plan as `plan`. */
export function runbookPlan(plan: LaunchPlan, o: RunbookPlanOptions = {}): Record<string, unknown> {
  const [, , model, ...rest] = plan.argv;
  const native = o.backend === "native";
  const flags = servingFlags(rest);
  for (const [k, v] of Object.entries(o.flags ?? {})) flags.set(k, v);
  const args = ["-m", "vllm.entrypoints.openai.api_server", "--model", native ? model : "/model"];
  for (const [f, v] of flags) {
    if (f === "--host") args.push(f, native ? v : "0.0.0.0");
    else if (v === "true") args.push(f);
    else args.push(f, f === "--kv-transfer-config" ? pyJson(JSON.parse(v)) : v);
  }
  return {
    role: "engine-1",
    image: native ? "" : (o.image ?? "sha256:" + "c".repeat(64)),
    model_dir: model,
    name: "narwhal-engine-1-0123456789ab",
    common: native ? [] : ["--network", "host", "--ipc", "host"],
    args,
    endpoint: plan.url,
    attestation_port: o.attestationPort ?? 8200,
    side_channel_port: Number(plan.env.VLLM_NIXL_SIDE_CHANNEL_PORT),
    ucx_tls: plan.env.UCX_TLS,
    revision: "0123456789abcdef0123456789abcdef01234567",
    ...(native ? { backend: "native", model_path: model, python_executable: "/usr/bin/python3" } : {}),
    launcher_sha256: "d".repeat(64),
  };
}

/** The launcher's env file: its own keys, the plan's environment and the API key. */
export function runbookEnv(plan: LaunchPlan, apiKey: string, over: Record<string, string> = {}): Record<string, string> {
  return { ...plan.env, VLLM_API_KEY: apiKey, PYTHONPATH: "/narwhal-hooks", ...over };
}

export interface WrittenRun {
  readonly run: string;
  readonly launchText: string;
  readonly planSha256: string;
}

/** Writes launch.json, checked.json and the env file (0600) as `prepare` and `check` do. */
export function writeRunbookRun(run: string, launch: Record<string, unknown>, env: Record<string, string>): WrittenRun {
  fs.mkdirSync(path.join(run, "hook"), { recursive: true, mode: 0o700 });
  const launchText = JSON.stringify(launch, null, 2) + "\n";
  const planSha256 = createHash("sha256").update(launchText).digest("hex");
  fs.writeFileSync(path.join(run, "launch.json"), launchText, { mode: 0o600 });
  const envName = launch.backend === "native" ? "engine.env" : "container.env";
  fs.writeFileSync(path.join(run, envName), Object.entries(env).sort().map(([k, v]) => `${k}=${v}\n`).join(""), { mode: 0o600 });
  const checked = { plan_sha256: planSha256, vllm_api_version: "0.29.0", ...(launch.backend === "native" ? { backend: "native" } : { image_id: launch.image }) };
  fs.writeFileSync(path.join(run, "checked.json"), JSON.stringify(checked, null, 2) + "\n", { mode: 0o600 });
  return { run, launchText, planSha256 };
}

/** `process_identity(pid)` of narwhal's native launcher: what native-process.json records. */
export function processIdentity(pid: number): { pid: number; boot_id: string; start_ticks: number } {
  const bootId = fs.readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 1).trim().split(/\s+/);
  return { pid, boot_id: bootId, start_ticks: Number(fields[19]) };
}

export const BOOT = "6f1c2d3e-0000-4000-8000-000000000001";

/** What the survey would report for a live native launch of `launch`. */
export function nativeSurvey(launch: Record<string, unknown>, env: Record<string, string>, over: Partial<RunbookSurvey> = {}): RunbookSurvey {
  const text = JSON.stringify(launch, null, 2) + "\n";
  const sha = createHash("sha256").update(text).digest("hex");
  const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64");
  return {
    run: "/home/op/runbook/runs/engine-launch-20260101T000000Z-42",
    launchJson: b64(text),
    checkedJson: b64(JSON.stringify({ plan_sha256: sha, backend: "native", vllm_api_version: "0.29.0" })),
    processJson: b64(JSON.stringify({ pid: 4242, boot_id: BOOT, start_ticks: 777 }, null, 2)),
    live: { pid: 4242, pgid: 4242, startTicks: 777, bootId: BOOT },
    env,
    ...over,
  };
}

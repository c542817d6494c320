/** Facts of one engine as earlier gates record them, and the real narwhal package to judge what is built from them. */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type { AttestationFacts } from "../../../lib/attestation/document";
import { cacheLayoutDigest, type CacheRankLayout } from "../../../lib/engine/cache-layout";
import { renderLaunchPlan, type LaunchInputs } from "../../../lib/launch/plan";
import { launchInputs } from "../launch/inputs";

const ROOT = path.resolve(__dirname, "..", "..", "..");
export const PYTHON = path.join(ROOT, ".tools", "venv", "bin", "python");

export { launchInputs };

/** A TinyLlama-shaped cache (GQA 4 heads of 64 over 22 layers) on TP 2. */
export function ranks(dtype = "bfloat16", tp = 2): CacheRankLayout[] {
  return Array.from({ length: tp }, (_, rank) => ({
    rank,
    blockSize: 128,
    numGpuBlocks: 900,
    numLayers: 22,
    numKvHeads: 4,
    numKvHeadsPerRank: 4 / tp,
    headSize: 64,
    dtype,
    cacheDtype: "auto",
    kvCacheLayout: "LBHNC",
    attentionBackend: "FLASH_ATTN",
    useMla: false,
    bytesPerTokenPerLayer: 2 * (4 / tp) * 64 * 2,
    pageSizeBytes: 2 * (4 / tp) * 64 * 2 * 128,
    bytesPerToken: 2 * (4 / tp) * 64 * 2 * 22,
  }));
}

export function facts(over: { policy?: Partial<LaunchInputs["policy"]>; id?: string; dtype?: string; processStartTime?: number; pid?: number } = {}): AttestationFacts {
  const plan = renderLaunchPlan(launchInputs(over.policy, over.id ?? "e1"));
  const layout = { tensorParallelSize: 2, ranks: ranks(over.dtype ?? over.policy?.dtype ?? "bfloat16") };
  return {
    engineId: over.id ?? "e1",
    plan,
    layout,
    cacheLayoutDigest: cacheLayoutDigest(layout),
    generation: { generationDigest: "sha256:" + "6e".repeat(32), version: "0.29.0", processIdentity: { hostAlias: "a", pid: over.pid ?? 4242 } },
    model: { architecture: "LlamaForCausalLM", numHiddenLayers: 22, configSha256: "c0".repeat(32) },
    transfer: { nixlVersion: "0.7.1", connectorVersion: 9, checkDigest: "sha256:" + "d1".repeat(32) },
  };
}

/** Runs a Python snippet in the pinned narwhal-inference venv with files written to a temporary folder. */
export function narwhal(script: string, files: Record<string, string> = {}): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "narwhal-attest-"));
  try {
    for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), text);
    return execFileSync(PYTHON, ["-c", script, dir], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (err) {
    const e = err as { stderr?: string; stdout?: string };
    throw new Error(`narwhal snippet failed:\n${e.stdout ?? ""}${e.stderr ?? ""}`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type { EvidenceRecord, EvidenceRecordFields } from "../../../lib/evidence/record";

/** A fresh temporary folder per test, removed afterwards; the store root is `<tmp>/runs/dev/evidence`. */
export function tempDirs(): { tmp: () => string; root: () => string } {
  let dir = "";
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "evidence-"));
  });
  afterEach(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return { tmp: () => dir, root: () => path.join(dir, "runs", "dev", "evidence") };
}

/** A fixed discovery record; `overrides` replace top-level fields. Not validated: tests hand it to the store. */
export function sampleRecord(overrides: Partial<EvidenceRecordFields> = {}): EvidenceRecord {
  return {
    schema: "narwhal-fleet.evidence",
    schemaVersion: 1,
    kind: "discovery",
    subject: { kind: "host", alias: "sim1" },
    stack: "dev",
    inputs: {
      destination: "ubuntu@10.77.0.11",
      hostKey: "sha256:3d4f2b8a0c9e1f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a",
      fabricInterface: "fab0",
      modelDir: "/srv/narwhal/models/qwen3-8b",
    },
    startingState: { discovery: "none" },
    commands: [
      {
        argv: ["nvidia-smi", "--query-gpu=index,pci.bus_id,name", "--format=csv,noheader"],
        host: "sim1",
        exitStatus: 0,
        startedAt: "2025-01-31T12:00:00.000Z",
        endedAt: "2025-01-31T12:00:01.250Z",
      },
    ],
    startedAt: "2025-01-31T12:00:00.000Z",
    endedAt: "2025-01-31T12:00:02.000Z",
    sourceRevision: "9b0cc90e0d1f2a3b4c5d6e7f8091a2b3c4d5e6f7",
    observations: {
      hostname: "gpu-node-17",
      fabricAddress: "10.77.0.11",
      gpus: [{ index: 0, busId: "0000:3b:00.0", name: "NVIDIA H100 80GB HBM3" }],
    },
    verdict: { status: "pass", reasons: [] },
    artifacts: [],
    ...overrides,
  };
}

/** Every regular file under `dir` (recursively), with its bytes. */
export function filesUnder(dir: string): Array<{ file: string; bytes: Buffer }> {
  const out: Array<{ file: string; bytes: Buffer }> = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesUnder(p));
    else if (entry.isFile()) out.push({ file: p, bytes: fs.readFileSync(p) });
  }
  return out;
}

/** The rejection of a promise, so a test can assert on its code and exact message. */
export async function rejectionOf(promise: Promise<unknown>): Promise<Error & { code?: string }> {
  try {
    await promise;
  } catch (error) {
    return error as Error & { code?: string };
  }
  throw new Error("expected the promise to reject, but it resolved");
}

/** The mode bits of a path, as "700" / "600". */
export const modeOf = (p: string) => (fs.lstatSync(p).mode & 0o777).toString(8);

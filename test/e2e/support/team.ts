/**
 * A team's setup for the e2e layer: one S3-compatible store (the project's SeaweedFS, a private instance)
 * holding both the Pulumi state, through the CLI's DIY S3 backend, and the stack's evidence; and a second
 * clone of the project that never ran `up`, as another operator's or a CI job's checkout.
 */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { S3Bucket } from "../../../lib/evidence/s3/client";
import type { ObjectStoreServer } from "../../support/object-store";
import { PROJECT_ROOT } from "./stack";

export const TEAM_BUCKET = "narwhal-team";

export interface TeamStore {
  /** The environment every CLI command and npm script of the team gets: the state backend and the store's credentials. */
  readonly env: Record<string, string>;
  /** `evidence.store` for the stack's config. */
  readonly evidenceStore: string;
  readonly bucket: S3Bucket;
}

/** Creates the team's bucket on `server` and says how to reach it. */
export async function teamStore(server: ObjectStoreServer): Promise<TeamStore> {
  const credentials = { accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey };
  const bucket = new S3Bucket({ endpoint: server.endpoint, bucket: TEAM_BUCKET, region: server.region, name: TEAM_BUCKET }, credentials);
  await bucket.createBucket();
  const query = `endpoint=${server.endpoint}&region=${server.region}`;
  return {
    env: {
      PULUMI_BACKEND_URL: `s3://${TEAM_BUCKET}?${query}&use_path_style=true&awssdk=v2`,
      AWS_ACCESS_KEY_ID: server.accessKeyId,
      AWS_SECRET_ACCESS_KEY: server.secretAccessKey,
      AWS_REGION: server.region,
      // As scripts/object-store.sh's env: no checksum warning on every state read from SeaweedFS.
      AWS_RESPONSE_CHECKSUM_VALIDATION: "when_required",
    },
    evidenceStore: `s3://${TEAM_BUCKET}/evidence?${query}`,
    bucket,
  };
}

/**
 * A second checkout of the project: its files as git sees them (tracked, and new ones not ignored) and the
 * stack's config file, which a team commits. What `npm run setup` installs (packages, the CLI and its
 * plugins) and the compile cache are linked from this checkout rather than installed again; the operator's
 * SSH key is linked as that operator would have it. No state, no `runs/`: nothing any `up` left behind.
 */
export function secondClone(stack: string): { dir: string; remove(): void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "narwhal-fleet-clone-"));
  const files = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], { cwd: PROJECT_ROOT, encoding: "utf8" })
    .split("\0")
    .filter((f) => f && fs.existsSync(path.join(PROJECT_ROOT, f)));
  for (const f of [...files, `Pulumi.${stack}.yaml`]) {
    fs.mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
    fs.copyFileSync(path.join(PROJECT_ROOT, f), path.join(dir, f));
  }
  for (const linked of ["node_modules", "policy/node_modules", ".tools", ".build", ".sim/ssh"]) {
    fs.mkdirSync(path.dirname(path.join(dir, linked)), { recursive: true });
    fs.symlinkSync(path.join(PROJECT_ROOT, linked), path.join(dir, linked));
  }
  return { dir, remove: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

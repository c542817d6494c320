/**
 * Before the program declares anything, a stack whose evidence lives in an S3 bucket checks that the
 * bucket answers to the environment's credentials: a store that is down, or credentials that are missing
 * or refused, end the run in one line before any host is touched, rather than as one failure per
 * measurement after the fleet was changed. The default folder needs no check.
 */
import * as pulumi from "@pulumi/pulumi";
import { S3Backend } from "../lib/evidence/backends/s3";
import { parseEvidenceLocation } from "../lib/evidence/location";

/** Reads `evidence.store` as written; a value that does not parse is left for the config's own report. */
function configuredLocation() {
  const section = new pulumi.Config().getObject<{ store?: unknown }>("evidence");
  if (typeof section?.store !== "string") return undefined;
  try {
    const location = parseEvidenceLocation(section.store);
    return location.type === "s3" ? location : undefined;
  } catch {
    return undefined;
  }
}

export async function checkEvidenceStore(): Promise<void> {
  const location = configuredLocation();
  if (!location) return;
  try {
    await new S3Backend(location, pulumi.getStack()).bucket.check();
  } catch (error) {
    if (typeof (error as { code?: unknown }).code === "string") throw new pulumi.RunError((error as Error).message);
    throw error;
  }
}

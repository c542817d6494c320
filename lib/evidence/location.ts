/**
 * Where a stack's evidence store lives: the folder `runs/<stack>/evidence` of this project (the default),
 * or a prefix in an S3-compatible bucket that every operator and CI job of the stack can reach.
 *
 * Written as `evidence.store` in the stack config: `s3://<bucket>[/<prefix>]?endpoint=<url>&region=<r>`,
 * the form Pulumi's own DIY S3 backend takes, so the state and the evidence can share one store. The
 * stack's records go under `<prefix>/<stack>/evidence/`. Credentials are never part of it: they come from
 * the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), as for the Pulumi CLI.
 */
import { EvidenceError } from "./errors";

export type EvidenceLocation = { readonly type: "folder" } | S3Location;

export interface S3Location {
  readonly type: "s3";
  readonly bucket: string;
  /** Key prefix without leading or trailing `/`; "" for the bucket's top. */
  readonly prefix: string;
  /** `http(s)://host[:port]`, no path. */
  readonly endpoint: string;
  readonly region: string;
}

export const DEFAULT_LOCATION: EvidenceLocation = { type: "folder" };

// S3's bucket naming rules (lowercase, 3–63, no leading or trailing dot or hyphen).
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
const PREFIX_SEGMENT = /^[A-Za-z0-9._-]+$/;
/** Pulumi's DIY S3 backend takes these too; they say nothing this client needs, so they are allowed and ignored. */
const IGNORED_PARAMS = new Set(["use_path_style", "awssdk", "s3ForcePathStyle", "disableSSL", "profile"]);

/** Why `url` is not a store location, or undefined when it is one. */
export function evidenceLocationProblem(url: string): string | undefined {
  try {
    parseEvidenceLocation(url);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

/**
 * Parses `evidence.store`. Throws `NARWHAL_EVIDENCE_LOCATION` naming what is wrong; no endpoint means AWS
 * S3 itself (`https://s3.<region>.amazonaws.com`).
 */
export function parseEvidenceLocation(url: string | undefined): EvidenceLocation {
  if (url === undefined || url === "") return DEFAULT_LOCATION;
  const bad = (why: string) =>
    new EvidenceError("NARWHAL_EVIDENCE_LOCATION", `evidence store ${JSON.stringify(url)} ${why}; expected s3://<bucket>[/<prefix>]?endpoint=<http(s)://host:port>&region=<region>`);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw bad("is not a URL");
  }
  if (parsed.protocol !== "s3:") throw bad(`has scheme ${JSON.stringify(parsed.protocol.replace(/:$/, ""))}, not s3`);
  if (parsed.username || parsed.password) throw bad("holds credentials: give them in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY instead, never in config");
  const bucket = parsed.hostname;
  if (!BUCKET.test(bucket)) throw bad(`names bucket ${JSON.stringify(bucket)}, which S3 does not allow (3-63 lowercase letters, digits, "." or "-")`);
  const segments = parsed.pathname.split("/").filter((s) => s !== "");
  const wrong = segments.find((s) => !PREFIX_SEGMENT.test(s) || s === "." || s === "..");
  if (wrong !== undefined) throw bad(`has prefix segment ${JSON.stringify(wrong)}: use letters, digits, ".", "_" or "-"`);
  const region = parsed.searchParams.get("region") ?? "us-east-1";
  if (!/^[a-z0-9-]{1,32}$/.test(region)) throw bad(`has region ${JSON.stringify(region)}`);
  let endpoint = `https://s3.${region}.amazonaws.com`;
  const given = parsed.searchParams.get("endpoint");
  if (given !== null) {
    let e: URL;
    try {
      e = new URL(given);
    } catch {
      throw bad(`has endpoint ${JSON.stringify(given)}, which is not a URL`);
    }
    if (e.protocol !== "http:" && e.protocol !== "https:") throw bad(`has endpoint ${JSON.stringify(given)}: use http:// or https://`);
    if (e.pathname !== "/" || e.search || e.username) throw bad(`has endpoint ${JSON.stringify(given)}: give only scheme, host and port`);
    endpoint = e.origin;
  }
  for (const key of parsed.searchParams.keys()) {
    if (key !== "endpoint" && key !== "region" && !IGNORED_PARAMS.has(key)) throw bad(`has parameter ${JSON.stringify(key)}, which this store does not know`);
  }
  return { type: "s3", bucket, prefix: segments.join("/"), endpoint, region };
}

/** The key prefix one stack's records live under. */
export function stackPrefix(location: S3Location, stack: string): string {
  return [location.prefix, stack, "evidence"].filter((s) => s !== "").join("/");
}

/** The location as messages name it: never a credential, since a location holds none. */
export function describeLocation(location: S3Location, stack: string): string {
  return `s3://${location.bucket}/${stackPrefix(location, stack)} (${location.endpoint})`;
}

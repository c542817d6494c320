/**
 * A private SeaweedFS S3 store for one test file: the project's own `weed` (built by scripts/setup.sh into
 * .tools/bin) as `weed server -s3`, on free loopback ports, over a temporary data directory, with S3
 * authentication on for one identity whose fresh random credentials it returns. scripts/object-store.sh runs
 * the project's long-lived store with the same flags (the reasons for them are there); this one shares
 * nothing with it, and `stop()` kills it and removes its directory.
 */
import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { freePorts } from "../unit/sim-engine/helpers";
import { signRequest } from "../../lib/evidence/s3/sigv4";

export interface ObjectStoreServer {
  /** `http://127.0.0.1:<port>`, path-style. */
  endpoint: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** weed's -dir: the volumes and the filer's metadata. */
  dataDir: string;
  /** weed's output, for a failing test to show. */
  logFile: string;
  /** Kills weed's process group and removes its directory (data and log); safe to call twice. */
  stop(): Promise<void>;
}

const ROOT = process.env.NARWHAL_ROOT ?? path.resolve(__dirname, "../..");
const WEED = path.join(ROOT, ".tools", "bin", "weed");
const REGION = "us-east-1";
/**
 * How long `startObjectStore` waits for the store to take a write. On an idle machine its S3 port answers
 * 2-6 s after the start and a write goes through some 8-10 s later; a machine busy with a provider lane
 * beside this one needs more.
 */
export const OBJECT_STORE_READY_TIMEOUT_MS = 90_000;

/** The last `lines` lines of weed's log, for an error message. */
function logTail(logFile: string, lines = 40): string {
  try {
    return fs.readFileSync(logFile, "utf8").split("\n").slice(-lines).join("\n");
  } catch {
    return "(no log)";
  }
}

/**
 * The environment weed starts from: the runner's, minus AWS_* (SeaweedFS makes an admin identity of any
 * AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY it inherits, config file or not) and WEED_* (its configuration
 * keys, read from the environment), plus its one setting that has no flag.
 */
function weedEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !/^(AWS_|WEED_)/.test(k)) env[k] = v;
  }
  // master.toml's volume_growth.copy_1: one volume per bucket to begin with, not seven.
  env.WEED_MASTER_VOLUME_GROWTH_COPY_1 = "1";
  return env;
}

/**
 * A path-style S3 request to the store, signed with its credentials by the project's own signer
 * (lib/evidence/s3/sigv4.ts); `path` is sent as given, so it must be URI-encoded already and carry no
 * query. Resolves with any HTTP answer; rejects only when there is none within `timeoutMs`.
 */
export async function signedRequest(
  server: Pick<ObjectStoreServer, "endpoint" | "region" | "accessKeyId" | "secretAccessKey">,
  method: string,
  requestPath: string,
  options: { body?: string | Buffer; headers?: Record<string, string>; timeoutMs?: number } = {},
): Promise<{ status: number; text: string }> {
  const url = new URL(requestPath, server.endpoint);
  const body = options.body === undefined ? Buffer.alloc(0) : Buffer.from(options.body);
  const payloadSha256 = createHash("sha256").update(body).digest("hex");
  const headers = signRequest({ method, url, headers: options.headers ?? {}, payloadSha256 }, server, server.region, new Date());
  delete headers.host; // fetch sets it, from the URL
  const res = await fetch(url, { method, headers, body: body.length > 0 ? body : undefined, signal: AbortSignal.timeout(options.timeoutMs ?? 30_000) });
  return { status: res.status, text: await res.text() };
}

/**
 * Starts a store and resolves once it takes a signed write. If it does not within
 * OBJECT_STORE_READY_TIMEOUT_MS, kills it and throws naming the bound and its log (kept, with its tail in the
 * message); throws "run npm run setup" if `weed` is missing.
 */
export async function startObjectStore(): Promise<ObjectStoreServer> {
  if (!fs.existsSync(WEED)) throw new Error(`${WEED} is missing: run npm run setup`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "narwhal-object-store-"));
  const dataDir = path.join(dir, "data");
  const logFile = path.join(dir, "weed.log");
  fs.mkdirSync(dataDir);
  const accessKeyId = `NW${randomBytes(9).toString("hex").toUpperCase()}`;
  const secretAccessKey = randomBytes(20).toString("hex");
  const identities = path.join(dir, "s3.json");
  fs.writeFileSync(
    identities,
    JSON.stringify({ identities: [{ name: "narwhal", credentials: [{ accessKey: accessKeyId, secretKey: secretAccessKey }], actions: ["Admin", "Read", "Write", "List", "Tagging"] }] }),
    { mode: 0o600 },
  );
  // Every port explicitly, gRPC ones included: SeaweedFS's default gRPC port (the HTTP port plus 10000) is
  // neither checked free nor, above 55535, a port at all.
  const [s3, s3Grpc, master, masterGrpc, volume, volumeGrpc, filer, filerGrpc] = await freePorts(8);
  const endpoint = `http://127.0.0.1:${s3}`;
  const log = fs.openSync(logFile, "a");
  // detached: weed leads a process group of its own, which stop() kills whole.
  const proc = spawn(
    WEED,
    [
      // glog's files would otherwise pile up in /tmp, one set per start: everything goes to the log file.
      "-logtostderr",
      "server",
      "-ip=127.0.0.1",
      "-ip.bind=127.0.0.1",
      `-dir=${dataDir}`,
      `-master.port=${master}`,
      `-master.port.grpc=${masterGrpc}`,
      "-master.peers=none",
      "-master.volumeSizeLimitMB=64",
      "-master.telemetry=false",
      `-volume.port=${volume}`,
      `-volume.port.grpc=${volumeGrpc}`,
      "-volume.max=16",
      "-volume.preStopSeconds=0",
      `-filer.port=${filer}`,
      `-filer.port.grpc=${filerGrpc}`,
      "-filer.disableHttp=true",
      `-filer.localSocket=${path.join(dir, "filer.sock")}`,
      "-s3",
      `-s3.port=${s3}`,
      `-s3.port.grpc=${s3Grpc}`,
      "-s3.port.iceberg=0",
      "-s3.port.lance=0",
      "-s3.iam=false",
      `-s3.localSocket=${path.join(dir, "s3.sock")}`,
      `-s3.config=${identities}`,
    ],
    { cwd: dir, env: weedEnv(), detached: true, stdio: ["ignore", log, log] },
  );
  fs.closeSync(log);
  let exited: string | undefined;
  proc.once("error", (err) => (exited = `could not start (${err.message})`));
  proc.once("exit", (code, signal) => (exited = `exited (${signal ?? `code ${code}`})`));
  // The test process ending without stop() (a crash, mocha --exit) must not leave weed behind.
  const killGroup = () => {
    try {
      if (proc.pid !== undefined) process.kill(-proc.pid, "SIGKILL");
    } catch {
      // already gone
    }
  };
  process.once("exit", killGroup);
  const kill = async (): Promise<void> => {
    process.removeListener("exit", killGroup);
    if (exited === undefined) {
      const gone = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
      killGroup();
      await gone;
    }
    // The Unix sockets SeaweedFS names by gRPC port in /tmp (not configurable); a killed weed leaves them.
    for (const [service, port] of [["master", masterGrpc], ["volume", volumeGrpc], ["filer", filerGrpc], ["s3", s3Grpc]] as const) {
      fs.rmSync(`/tmp/seaweedfs-${service}-grpc-${port}.sock`, { force: true });
    }
  };
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    await kill();
    fs.rmSync(dir, { recursive: true, force: true });
  };
  const server: ObjectStoreServer = { endpoint, region: REGION, accessKeyId, secretAccessKey, dataDir, logFile, stop };

  // Readiness is a signed write, not the S3 port answering. The port opens once the gateway has read the
  // filer's configuration (weed/command/s3.go), so from then on an unsigned GET / gets a 403; but a write
  // still waits for the filer to join the master's lock ring, some 8-10 s later, and fails with a 500 if
  // that takes more than 15 s (weed/cluster/lock_client.go). So: a probe bucket, one object written and
  // deleted, the bucket deleted (its volume with it), each retried while the answer is a 5xx or none.
  const deadline = Date.now() + OBJECT_STORE_READY_TIMEOUT_MS;
  const probe = `readiness-${randomBytes(4).toString("hex")}`;
  const steps: [string, string, string | undefined][] = [
    ["PUT", `/${probe}`, undefined],
    ["PUT", `/${probe}/probe`, "probe"],
    ["DELETE", `/${probe}/probe`, undefined],
    ["DELETE", `/${probe}`, undefined],
  ];
  let failure: string | undefined;
  let last = "no answer yet";
  probing: for (const [method, requestPath, body] of steps) {
    for (;;) {
      if (exited !== undefined) {
        failure = `weed ${exited} before it took a write (last: ${last})`;
        break probing;
      }
      const left = deadline - Date.now();
      if (left <= 0) {
        failure = `no signed write went through within OBJECT_STORE_READY_TIMEOUT_MS=${OBJECT_STORE_READY_TIMEOUT_MS} ms (last: ${last})`;
        break probing;
      }
      let status = 0;
      try {
        const res = await signedRequest(server, method, requestPath, { body, timeoutMs: left });
        status = res.status;
        last = `${method} ${requestPath}: HTTP ${status}${status >= 300 ? ` ${res.text.slice(0, 300)}` : ""}`;
      } catch (err) {
        last = `${method} ${requestPath}: ${(err as Error).message}`;
      }
      if (status >= 200 && status < 300) break;
      if (status >= 300 && status < 500) {
        failure = `the readiness probe was refused: ${last}`;
        break probing;
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  if (failure !== undefined) {
    // The log stays, for the message to point at; the data goes.
    await kill();
    fs.rmSync(dataDir, { recursive: true, force: true });
    throw new Error(`SeaweedFS on ${endpoint}: ${failure}. Its log is ${logFile}, ending:\n${logTail(logFile)}`);
  }
  return server;
}

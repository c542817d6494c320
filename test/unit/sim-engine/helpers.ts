/**
 * Starts engine simulators as real child processes on 127.0.0.1 and stops every one of them.
 * Tests call `stopAll()` in an `after`/`afterEach` hook; nothing outlives the suite.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type AddressInfo, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { SimConfigInput } from "../../../sim/engine/config";
import { writeTestModel, type TestModelOptions } from "../../../sim/engine/testing-model";

export const ROOT = resolve(__dirname, "../../..");
export const MAIN = join(ROOT, "sim/engine/main.ts");
const TS_REQUIRE = join(ROOT, "tools/ts-require.js");
/**
 * Bounds for a simulator child on a machine that may be busy: it is waited for by its ready line, so a
 * quiet machine never waits them out, and a loaded one (two cores running a CLI beside the tests) has room.
 */
export const ENGINE_READY_TIMEOUT_MS = 60_000;
const RUN_TO_EXIT_TIMEOUT_MS = 60_000;
/**
 * The environment a simulator child starts from: the runner's, minus anything that would change the
 * engine's behaviour (NARWHAL_SIM_*, VLLM_*, *_VISIBLE_DEVICES).
 */
function childEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !/^(NARWHAL_SIM_|VLLM_)|_VISIBLE_DEVICES$/.test(k)) env[k] = v;
  }
  return { ...env, ...extra };
}

const temps: string[] = [];
const running = new Set<SimEngine>();

export function tempDir(prefix = "sim-engine-"): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  temps.push(dir);
  return dir;
}

export function makeModel(options: TestModelOptions = {}): string {
  return writeTestModel(join(tempDir("sim-model-"), "model"), options);
}

/**
 * `count` distinct ports the OS says are free right now, none of `except`: each stays bound until all are
 * chosen, so two calls' worth of ports never repeat one another (ports taken one after another can).
 */
export async function freePorts(count: number, except: readonly number[] = []): Promise<number[]> {
  const held: Server[] = [];
  const ports: number[] = [];
  try {
    while (ports.length < count) {
      const srv = createServer();
      held.push(srv);
      await new Promise<void>((bound, reject) => {
        srv.once("error", reject);
        srv.listen(0, "127.0.0.1", () => bound());
      });
      const port = (srv.address() as AddressInfo).port;
      if (!except.includes(port)) ports.push(port);
    }
  } finally {
    await Promise.all(held.map((srv) => new Promise((closed) => srv.close(() => closed(undefined)))));
  }
  return ports;
}

/** A port the OS says is free right now. */
export async function freePort(): Promise<number> {
  return (await freePorts(1))[0];
}

export interface StartOptions {
  model: string;
  args?: string[];
  env?: Record<string, string>;
  sim?: SimConfigInput;
  /** HTTP port (default: a free one). */
  port?: number;
  /** NIXL side-channel port (default: a free one). */
  sidePort?: number;
  /** The simulator's control port (default: a free one). */
  controlPort?: number;
}

export class SimEngine {
  stdout = "";
  stderr = "";
  /** The model directory it serves (its config.json is what a capture reads beside the log). */
  modelDir = "";
  readonly exited: Promise<number | null>;

  constructor(
    readonly proc: ChildProcess,
    readonly port: number,
    readonly sidePort: number,
    readonly controlPort = 0,
  ) {
    proc.stdout?.on("data", (d: Buffer) => (this.stdout += d.toString()));
    proc.stderr?.on("data", (d: Buffer) => (this.stderr += d.toString()));
    this.exited = new Promise((r) => proc.once("exit", (code) => r(code)));
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** The simulator's control port (sim/engine/control.ts): /truth, /cache-layout, /dead. */
  get controlUrl(): string {
    return `http://127.0.0.1:${this.controlPort}`;
  }

  /** Resolves when the engine prints its ready line; rejects if it exits first. */
  ready(timeoutMs = ENGINE_READY_TIMEOUT_MS): Promise<void> {
    return new Promise((resolveReady, reject) => {
      const timer = setTimeout(() => reject(new Error(`engine not ready after ENGINE_READY_TIMEOUT_MS=${timeoutMs} ms:\n${this.stdout}\n${this.stderr}`)), timeoutMs);
      const check = () => {
        if (this.stdout.includes("Application startup complete.")) {
          clearTimeout(timer);
          resolveReady();
        }
      };
      this.proc.stdout?.on("data", check);
      check();
      void this.exited.then((code) => {
        clearTimeout(timer);
        reject(new Error(`engine exited with ${code} before ready:\n${this.stdout}\n${this.stderr}`));
      });
    });
  }

  /** SIGTERM, then SIGKILL after 5 s; resolves with the exit code. */
  async stop(): Promise<number | null> {
    running.delete(this);
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return this.proc.exitCode;
    this.proc.kill("SIGTERM");
    const timer = setTimeout(() => this.proc.kill("SIGKILL"), 5000);
    const code = await this.exited;
    clearTimeout(timer);
    return code;
  }
}

/**
 * Spawns `main.ts serve <model> --host 127.0.0.1 --port P ...` without waiting for readiness, with its
 * control port on a free port of its own.
 */
export async function spawnEngine(o: StartOptions): Promise<SimEngine> {
  const given = [o.port, o.sidePort, o.controlPort].filter((p): p is number => p !== undefined);
  const spare = await freePorts(3 - given.length, given);
  const port = o.port ?? spare.shift()!;
  const sidePort = o.sidePort ?? spare.shift()!;
  const controlPort = o.controlPort ?? spare.shift()!;
  const env = childEnv({
    VLLM_NIXL_SIDE_CHANNEL_HOST: "127.0.0.1",
    VLLM_NIXL_SIDE_CHANNEL_PORT: String(sidePort),
    NARWHAL_SIM_CONTROL_PORT: String(controlPort),
    ...o.env,
  });
  if (o.sim) {
    const file = join(tempDir("sim-config-"), "sim.json");
    writeFileSync(file, JSON.stringify(o.sim));
    env.NARWHAL_SIM_CONFIG = file;
  }
  const proc = spawn(process.execPath, ["-r", TS_REQUIRE, MAIN, "serve", o.model, "--host", "127.0.0.1", "--port", String(port), ...(o.args ?? [])], {
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const engine = new SimEngine(proc, port, sidePort, controlPort);
  engine.modelDir = o.model;
  running.add(engine);
  return engine;
}

export async function startEngine(o: StartOptions): Promise<SimEngine> {
  const engine = await spawnEngine(o);
  await engine.ready();
  return engine;
}

/** Runs the simulator with arbitrary arguments to completion (startup refusals, --version). */
export async function runToExit(argv: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const proc = spawn(process.execPath, ["-r", TS_REQUIRE, MAIN, ...argv], { env: childEnv(env), stdio: ["ignore", "pipe", "pipe"] });
  const engine = new SimEngine(proc, 0, 0);
  running.add(engine);
  const timer = setTimeout(() => proc.kill("SIGKILL"), RUN_TO_EXIT_TIMEOUT_MS);
  const code = await engine.exited;
  clearTimeout(timer);
  running.delete(engine);
  return { code, stdout: engine.stdout, stderr: engine.stderr };
}

export async function stopAll(): Promise<void> {
  await Promise.all([...running].map((e) => e.stop()));
}

export function removeTemps(): void {
  for (const dir of temps.splice(0)) rmSync(dir, { recursive: true, force: true });
}

export const KV_BOTH = JSON.stringify({ kv_connector: "NixlConnector", kv_role: "kv_both" });

export interface HttpResult {
  status: number;
  text: string;
  json: any;
  headers: Headers;
}

export async function http(url: string, init: { method?: string; body?: unknown; headers?: Record<string, string> } = {}): Promise<HttpResult> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(url, {
    method: init.method ?? (init.body === undefined ? "GET" : "POST"),
    headers,
    body: init.body === undefined ? undefined : typeof init.body === "string" ? init.body : JSON.stringify(init.body),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, text, json, headers: res.headers };
}

/** Splits an SSE body into its `data:` payloads (parsed JSON, or the literal "[DONE]"). */
export function sseEvents(text: string): unknown[] {
  return text
    .split("\n\n")
    .filter((b) => b.length > 0)
    .map((b) => {
      if (!b.startsWith("data: ")) throw new Error(`not an SSE data event: ${JSON.stringify(b)}`);
      const payload = b.slice(6);
      return payload === "[DONE]" ? payload : JSON.parse(payload);
    });
}

/** Requests the engine has completed, from its own Prometheus counter: proves whether a step sent any. */
export async function completedRequests(engine: SimEngine): Promise<number> {
  const text = await (await fetch(`${engine.url}/metrics`)).text();
  return text
    .split("\n")
    .filter((l) => l.startsWith("vllm:request_success_total"))
    .reduce((sum, l) => sum + Number(l.split(/\s+/).pop()), 0);
}

/** Polls `ready` every 20 ms; fails naming `what` after `timeoutMs` (a bound for a loaded machine). */
export async function waitFor(ready: () => boolean, what: string, timeoutMs = 15000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!ready()) {
    if (Date.now() > until) throw new Error(`${what}: not seen within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

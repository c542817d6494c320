/**
 * Builds the engine-simulator image locally, with no registry: a root filesystem made from this
 * machine's own files, fed to `docker import`.
 *
 *   node -r ./tools/ts-require.js sim/image/build.ts      # prints the image ID (sha256:...)
 *
 * The image holds only what the simulator needs, nothing from the host beyond it:
 *   /usr/bin/node                       this machine's Node binary (it bundles ICU and OpenSSL)
 *   the shared libraries `ldd` lists     at the paths the dynamic loader asks for
 *   /opt/narwhal-sim/sim/engine/*.js     sim/engine/*.ts, transpiled with the project's TypeScript
 *   /opt/narwhal-sim/node_modules/zod    the CommonJS files of the project's zod (its only dependency)
 *   /usr/local/bin/vllm                  `vllm` as a Node script running the simulator
 *   /opt/narwhal-sim/sim/image/python.js sim/image/python.ts, transpiled: what the program asks of the
 *                                        image's Python (package list, image check, /health probe)
 *   /usr/local/bin/python3               a Node script running it
 *   <site-packages>/vllm/...             the simulated vllm package's files (sim/python/vllm): the image
 *                                        check reads NIXL_CONNECTOR_VERSION from its nixl/metadata.py
 *   <site-packages>/<dist>.dist-info     the distributions' metadata (sim/python/*.dist-info: NIXL)
 * with `ENTRYPOINT ["/usr/local/bin/vllm", "serve"]`, the vLLM image's own entrypoint, so that
 * `docker run <image> <model> [flags]` behaves like `vllm serve <model> [flags]`, and a declared volume
 * at {@link ENGINE_VOLUME}.
 *
 * Idempotent: the tag `narwhal-sim/engine:<first 16 hex of the inputs' sha256>` names the inputs (the
 * Node binary, libraries, sources, zod, this file); when it exists the build is skipped and the existing
 * image's ID printed. The tar stream is reproducible (sorted, mtime 0, root-owned), so the layer is too;
 * the image ID still differs between two builds of the same inputs because `docker import` stamps
 * the creation time, which is why the tag, not the ID, is the cache key.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import * as ts from "typescript";
import { IMAGE_SITE_PACKAGES } from "./python";

const ROOT = join(__dirname, "..", "..");
export const SIM_IMAGE_REPO = "narwhal-sim/engine";
const APP = "/opt/narwhal-sim";

const VLLM_SCRIPT = `#!/usr/bin/node
// The engine simulator as \`vllm\`: the image's entrypoint is \`vllm serve\`, as in the vLLM images.
require("${APP}/sim/engine/main.js");
`;

/** The image's `python3`: sim/image/python.ts, the calls the program makes of a vLLM image's Python. */
const PYTHON_SCRIPT = `#!/usr/bin/node
require("${APP}/sim/image/python.js").run();
`;

export interface SimImage {
  /** `sha256:<64 hex>`: the immutable ID to configure as runtime.image. */
  readonly id: string;
  readonly tag: string;
  /** False when an image of the same inputs already existed. */
  readonly built: boolean;
  readonly seconds: number;
  /** Uncompressed size the daemon reports. */
  readonly sizeBytes: number;
}

export interface BuildOptions {
  readonly docker?: string;
  readonly log?: (line: string) => void;
  /** Bakes NARWHAL_SIM_TIME_SCALE into the image: a container engine has no host sim config to read it from. */
  readonly timeScale?: number;
}

/** Files of the root filesystem: path inside the image -> where the content comes from (or the content). */
type RootFiles = Map<string, { from: string } | { content: Buffer; mode: number }>;

function sharedLibraries(binary: string): string[] {
  const out = execFileSync("ldd", [binary], { encoding: "utf8" });
  const libs: string[] = [];
  for (const line of out.split("\n")) {
    const m = /=>\s*(\/\S+)/.exec(line) ?? /^\s*(\/\S+)\s+\(0x/.exec(line);
    if (m) libs.push(m[1]);
  }
  if (!libs.some((l) => l.includes("ld-linux"))) throw new Error(`sim image: ldd ${binary} named no dynamic loader:\n${out}`);
  return libs;
}

function collect(): RootFiles {
  const files: RootFiles = new Map();
  const node = realpathSync(process.execPath);
  files.set("/usr/bin/node", { from: node });
  // The loader and libraries at the very paths the binary asks for (their symlinks resolved).
  for (const lib of sharedLibraries(node)) files.set(lib, { from: realpathSync(lib) });

  const options: ts.CompilerOptions = { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true };
  const engineDir = join(ROOT, "sim", "engine");
  for (const name of readdirSync(engineDir).filter((n) => n.endsWith(".ts")).sort()) {
    const source = readFileSync(join(engineDir, name), "utf8");
    const js = ts.transpileModule(source, { compilerOptions: options, fileName: name }).outputText;
    files.set(`${APP}/sim/engine/${name.replace(/\.ts$/, ".js")}`, { content: Buffer.from(js), mode: 0o644 });
  }

  const python = readFileSync(join(ROOT, "sim", "image", "python.ts"), "utf8");
  files.set(`${APP}/sim/image/python.js`, { content: Buffer.from(ts.transpileModule(python, { compilerOptions: options, fileName: "python.ts" }).outputText), mode: 0o644 });

  // The Python package side of the simulated vLLM, where a vLLM image keeps it (no compiled files).
  const simPython = join(ROOT, "sim", "python");
  const copyTree = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const full = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== "__pycache__") copyTree(full);
      } else if (!entry.name.endsWith(".pyc")) {
        files.set(`${IMAGE_SITE_PACKAGES}/${relative(simPython, full)}`, { from: full });
      }
    }
  };
  for (const entry of readdirSync(simPython).sort()) {
    if (entry === "vllm" || entry.endsWith(".dist-info")) copyTree(join(simPython, entry));
  }

  const zod = join(ROOT, "node_modules", "zod");
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = join(dir, entry.name);
      const rel = relative(zod, full);
      if (entry.isDirectory()) {
        if (rel !== "src") walk(full);
      } else if (entry.name.endsWith(".cjs") || rel === "package.json" || rel === "LICENSE") {
        files.set(`${APP}/node_modules/zod/${rel}`, { from: full });
      }
    }
  };
  walk(zod);
  files.set("/usr/local/bin/vllm", { content: Buffer.from(VLLM_SCRIPT), mode: 0o755 });
  files.set("/usr/local/bin/python3", { content: Buffer.from(PYTHON_SCRIPT), mode: 0o755 });
  return files;
}

/** The image's declared volume: each container of it gets an anonymous volume there. */
export const ENGINE_VOLUME = "/var/cache/engine";

function inputsDigest(files: RootFiles, changes: string[]): string {
  const h = createHash("sha256");
  h.update(readFileSync(__filename));
  for (const c of changes) h.update(`\0${c}`);
  for (const [path, src] of [...files.entries()].sort(([a], [b]) => (a < b ? -1 : 1))) {
    h.update(`\0${path}\0`);
    h.update("from" in src ? readFileSync(src.from) : src.content);
  }
  return h.digest("hex");
}

function docker(bin: string, args: string[]): { ok: boolean; out: string; err: string } {
  const r = spawnSync(bin, args, { encoding: "utf8", timeout: 120_000 });
  return { ok: r.status === 0, out: (r.stdout ?? "").trim(), err: (r.stderr ?? "").trim() };
}

function describe(bin: string, ref: string): { id: string; size: number } | undefined {
  const r = docker(bin, ["image", "inspect", "--format", "{{.Id}} {{.Size}}", ref]);
  if (!r.ok) return undefined;
  const [id, size] = r.out.split(" ");
  return { id: id, size: Number(size) };
}

/**
 * What a failed import says about the machine's daemon: the dockerd processes in the machine's own
 * network namespace (a docker host's daemon runs in its host's) and the last lines of the log
 * scripts/setup.sh started it with, so a daemon that died says how.
 */
function daemonDiagnosis(): string {
  const ownNet = readlinkOrEmpty("/proc/self/ns/net");
  const daemons = readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => readOrEmpty(`/proc/${d}/comm`).trim() === "dockerd" && readlinkOrEmpty(`/proc/${d}/ns/net`) === ownNet);
  const log = readOrEmpty(join(ROOT, ".tools", "dockerd.log")).trimEnd().split("\n").slice(-10).join("\n");
  return `the machine's dockerd: ${daemons.length ? `pid ${daemons.join(", ")}` : "no process"}; last lines of .tools/dockerd.log:\n${log || "(none)"}`;
}

function readOrEmpty(file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return "";
  }
}

function readlinkOrEmpty(link: string): string {
  try {
    return readlinkSync(link);
  } catch {
    return "";
  }
}

/** Builds (or finds) the simulator image and returns its immutable ID. */
export function buildSimImage(opts: BuildOptions = {}): SimImage {
  const bin = opts.docker ?? "docker";
  const log = opts.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const t0 = Date.now();
  const files = collect();
  const scaleEnv = opts.timeScale === undefined ? [] : [`ENV NARWHAL_SIM_TIME_SCALE=${opts.timeScale}`];
  const tag = `${SIM_IMAGE_REPO}:${inputsDigest(files, scaleEnv).slice(0, 16)}`;
  const existing = describe(bin, tag);
  if (existing) {
    const seconds = (Date.now() - t0) / 1000;
    log(`sim image ${tag} exists (${existing.id}, ${(existing.size / 1e6).toFixed(1)} MB); checked in ${seconds.toFixed(1)}s`);
    return { id: existing.id, tag, built: false, seconds, sizeBytes: existing.size };
  }

  const stage = mkdtempSync(join(tmpdir(), "narwhal-sim-image-"));
  try {
    const rootfs = join(stage, "rootfs");
    for (const [path, src] of files) {
      const dest = join(rootfs, path);
      mkdirSync(dirname(dest), { recursive: true });
      if ("from" in src) {
        copyFileSync(src.from, dest);
        chmodSync(dest, statSync(src.from).mode & 0o755);
      } else {
        writeFileSync(dest, src.content);
        chmodSync(dest, src.mode);
      }
    }
    mkdirSync(join(rootfs, "tmp"));
    chmodSync(join(rootfs, "tmp"), 0o1777);
    for (const d of ["proc", "sys", "dev", "etc", "model"]) mkdirSync(join(rootfs, d), { recursive: true });

    const changes = [
      `ENTRYPOINT ["/usr/local/bin/vllm", "serve"]`,
      "ENV PATH=/usr/local/bin:/usr/bin:/bin",
      ...scaleEnv,
      "WORKDIR /",
      // As many published images do, it declares a volume: docker makes an anonymous volume for every
      // container of it, which a destroy must remove with the container (test/e2e/docker-cli.test.ts).
      `VOLUME ["${ENGINE_VOLUME}"]`,
      `LABEL org.opencontainers.image.title="narwhal engine simulator" narwhal.sim/inputs="${tag.split(":")[1]}"`,
    ];
    const script = [
      "set -euo pipefail",
      'rootfs=$1 docker=$2 tag=$3; shift 3',
      'changes=(); for c in "$@"; do changes+=(--change "$c"); done',
      'tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$rootfs" -cf - . | "$docker" import "${changes[@]}" - "$tag" >/dev/null',
    ].join("\n");
    const r = spawnSync("bash", ["-c", script, "build", rootfs, bin, tag, ...changes], { encoding: "utf8", timeout: 300_000 });
    if (r.status !== 0) throw new Error(`sim image: docker import failed (exit ${r.status}): ${r.stderr.trim()}\n${daemonDiagnosis()}`);
    const made = describe(bin, tag);
    if (!made) throw new Error(`sim image: ${tag} is missing after docker import`);
    const seconds = (Date.now() - t0) / 1000;
    log(`sim image ${tag} built: ${made.id}, ${(made.size / 1e6).toFixed(1)} MB, in ${seconds.toFixed(1)}s`);
    return { id: made.id, tag, built: true, seconds, sizeBytes: made.size };
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
}

if (require.main === module) {
  try {
    process.stdout.write(`${buildSimImage().id}\n`);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    process.exitCode = 1;
  }
}

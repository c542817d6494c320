/**
 * The Python side of a simulated host's vLLM (sim/python, see narwhal_sim_python.py): a .pth file in
 * the user site of root's and narwhal's homes, as `pip install --user vllm` would leave an import path
 * there. It puts sim/python on the login's `python3` path and names the host's sim config, so a runtime
 * check (`python3 -c ...`, lib/image-check) imports a vllm that reports what this host's simulator does.
 * Only logins of this host see it: the homes are the host's own folders.
 *
 * A host that declares its own NIXL release (topology `nixl`) gets a folder of its own ahead of sim/python,
 * holding that release's `nixl-<version>.dist-info` as pip leaves one: `importlib.metadata` (the image
 * check) finds it first, and so does the engine simulator (its sim config names the folder).
 */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { PASSWORD_USER, PROJECT_ROOT } from "./constants";
import type { HostPaths } from "./paths";

/** The hosts' python3 (the machine's /usr, shared by every host). */
const HOST_PYTHON = "/usr/bin/python3";
export const SIM_PYTHON_DIR = path.join(PROJECT_ROOT, "sim", "python");
export const PTH_NAME = "narwhal-sim-vllm.pth";

let pythonVersion: string | null | undefined;

/** `3.11` for /usr/bin/python3, or null when the machine has none (then hosts have no Python vLLM). */
function hostPythonVersion(): string | null {
  if (pythonVersion === undefined) {
    try {
      pythonVersion = execFileSync(HOST_PYTHON, ["-c", "import sys; print('%d.%d' % sys.version_info[:2])"], { encoding: "utf8", timeout: 10_000 }).trim();
    } catch {
      pythonVersion = null;
    }
  }
  return pythonVersion;
}

/**
 * The .pth text: the host's own site (when it has one), then sim/python on the path, then the host's sim
 * config named (an `import` line runs at startup).
 */
export function pthText(simConfigPath: string, hostSite?: string): string {
  // No compiled files: sim/python is in the project tree, and a host's Python has no business writing there.
  return `${hostSite ? `${hostSite}\n` : ""}${SIM_PYTHON_DIR}\nimport sys; sys.dont_write_bytecode = True; import narwhal_sim_python; narwhal_sim_python.install(${JSON.stringify(simConfigPath)})\n`;
}

/** The METADATA of a NIXL distribution, as sim/python's own carries it. */
export function nixlMetadata(version: string): string {
  return `Metadata-Version: 2.1\nName: nixl\nVersion: ${version}\nSummary: NIXL Python API (simulated: the release this host's vLLM environment declares)\n`;
}

/**
 * Makes the host's own site hold exactly the NIXL release it declares, or removes the site when it declares
 * none (sim/python's release then stands). Returns the site when there is one.
 */
export function writeHostSite(p: HostPaths, nixl: string | undefined): string | undefined {
  if (!nixl) {
    fs.rmSync(p.pythonSite, { recursive: true, force: true });
    return undefined;
  }
  const distInfo = `nixl-${nixl}.dist-info`;
  fs.mkdirSync(p.pythonSite, { recursive: true, mode: 0o755 });
  for (const entry of fs.readdirSync(p.pythonSite)) {
    if (entry !== distInfo) fs.rmSync(path.join(p.pythonSite, entry), { recursive: true, force: true });
  }
  fs.mkdirSync(path.join(p.pythonSite, distInfo), { recursive: true, mode: 0o755 });
  const metadata = path.join(p.pythonSite, distInfo, "METADATA");
  if (!fs.existsSync(metadata) || fs.readFileSync(metadata, "utf8") !== nixlMetadata(nixl)) fs.writeFileSync(metadata, nixlMetadata(nixl), { mode: 0o644 });
  return p.pythonSite;
}

/**
 * Writes (or leaves, when unchanged) the .pth into each home's user site. Idempotent, so `up` can call
 * it on a running host as well as a new one. Returns the files written.
 */
export function writeSimPythonSite(p: HostPaths, nixl?: string): string[] {
  const hostSite = writeHostSite(p, nixl);
  const version = hostPythonVersion();
  if (!version) return [];
  const homes = [p.rootHome, path.join(p.homeDir, PASSWORD_USER)].filter((h) => fs.existsSync(h));
  const written: string[] = [];
  for (const home of homes) {
    const site = path.join(home, ".local", "lib", `python${version}`, "site-packages");
    const file = path.join(site, PTH_NAME);
    const text = pthText(p.simConfig, hostSite);
    if (fs.existsSync(file) && fs.readFileSync(file, "utf8") === text) continue;
    const owner = fs.statSync(home);
    // Each folder made here belongs to the home's owner, as pip --user would have left it.
    fs.mkdirSync(site, { recursive: true, mode: 0o755 });
    for (let dir = site; dir !== home; dir = path.dirname(dir)) fs.chownSync(dir, owner.uid, owner.gid);
    fs.writeFileSync(file, text, { mode: 0o644 });
    fs.chownSync(file, owner.uid, owner.gid);
    written.push(file);
  }
  return written;
}

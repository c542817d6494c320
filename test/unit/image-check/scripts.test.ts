/**
 * The image check's two remote scripts, run here under sh and python3: the native identity script
 * against console scripts and wrappers in a temporary folder, and the runtime check against the
 * simulated vllm package (sim/python) installed the way simulated hosts have it (a user-site .pth).
 */
import { expect } from "chai";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { NATIVE_IDENTITY_SH, parseNativeIdentity } from "../../../lib/image-check/native-identity";
import { parseCheckLines } from "../../../lib/image-check/verdict";
import { RUNTIME_CHECK_PY, type RuntimeCheckRequest } from "../../../lib/image-check/python";
import { PTH_NAME, pthText, writeSimPythonSite } from "../../../sim/hosts/python-site";
import type { HostPaths } from "../../../sim/hosts/paths";
import { writeCheckpoint } from "../../../sim/hosts/checkpoint";
import { NIXL_CONNECTOR_VERSION } from "../../../sim/engine/nixl-compat";

const PYTHON = "/usr/bin/python3";
const pythonVersion = spawnSync(PYTHON, ["-c", "import sys; print('%d.%d' % sys.version_info[:2])"], { encoding: "utf8" }).stdout.trim();

describe("image check: the native identity script", () => {
  let tmp = "";
  beforeEach(() => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), "image-check-"));
    fs.mkdirSync(path.join(tmp, "bin"));
  });
  afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

  function identify(command: string, versionTimeoutS = 10) {
    const r = spawnSync("sh", ["-s", "--", command, String(versionTimeoutS)], {
      input: NATIVE_IDENTITY_SH,
      encoding: "utf8",
      env: { PATH: `${tmp}/bin:/usr/bin:/bin`, HOME: tmp },
    });
    expect(r.status, r.stderr).to.equal(0);
    return parseNativeIdentity(r.stdout, command);
  }
  const script = (file: string, text: string) => fs.writeFileSync(file, text, { mode: 0o755 });

  it("finds a pip console script's own interpreter beside it and reads its version", () => {
    fs.mkdirSync(path.join(tmp, "venv", "bin"), { recursive: true });
    fs.symlinkSync(PYTHON, path.join(tmp, "venv", "bin", "python3"));
    script(path.join(tmp, "venv", "bin", "vllm"), `#!${tmp}/venv/bin/python3\nprint("INFO loading")\nprint("0.29.0")\n`);
    fs.symlinkSync(path.join(tmp, "venv", "bin", "vllm"), path.join(tmp, "bin", "vllm"));
    const id = identify("vllm");
    expect(id).to.deep.include({
      command: "vllm",
      path: path.join(tmp, "venv", "bin", "vllm"),
      scriptKind: "python",
      interpreter: path.join(tmp, "venv", "bin", "python3"),
      interpreterSource: "console-script",
      versionExit: 0,
      versionOutput: "INFO loading\n0.29.0",
    });
    expect(id.sha256).to.match(/^sha256:[0-9a-f]{64}$/);
  });

  it("reads pip's '''exec' launcher for long interpreter paths", () => {
    script(path.join(tmp, "bin", "vllm"), `#!/bin/sh\n'''exec' "${PYTHON}" "$0" "$@"\n' '''\nprint("0.29.0")\n`);
    expect(identify("vllm")).to.deep.include({ scriptKind: "python", interpreter: PYTHON, interpreterSource: "console-script", versionOutput: "0.29.0" });
  });

  it("uses the login's python3 for a launcher that is not a Python console script", () => {
    script(path.join(tmp, "bin", "vllm"), "#!/bin/sh\necho 0.29.0\n");
    expect(identify("vllm")).to.deep.include({ scriptKind: "shell", interpreter: "/usr/bin/python3", interpreterSource: "login-python3" });
  });

  it("says when the command is missing, and bounds --version", () => {
    expect(identify("vllm")).to.deep.include({ scriptKind: "missing", path: null, interpreter: null });
    script(path.join(tmp, "bin", "vllm"), "#!/bin/sh\nsleep 30\n");
    const started = Date.now();
    expect(identify("vllm", 1).versionExit).to.equal(124);
    expect(Date.now() - started).to.be.below(10_000);
  });
});

describe("image check: the runtime check against the simulated vllm package", () => {
  let tmp = "";
  let model = "";
  beforeEach(() => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), "image-check-"));
    model = path.join(tmp, "model");
    writeCheckpoint(model);
    fs.writeFileSync(path.join(tmp, "sim-config.json"), JSON.stringify({ version: "0.29.4" }));
    const site = path.join(tmp, "home", ".local", "lib", `python${pythonVersion}`, "site-packages");
    fs.mkdirSync(site, { recursive: true });
    fs.writeFileSync(path.join(site, "narwhal-sim-vllm.pth"), pthText(path.join(tmp, "sim-config.json")));
  });
  afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

  function run(over: Partial<RuntimeCheckRequest> = {}, env: Record<string, string> = {}, home = path.join(tmp, "home")) {
    const request: RuntimeCheckRequest = {
      pins: { vllm: "0.29.4" },
      kvTransferConfig: { kv_connector: "NixlConnector", kv_role: "kv_both", kv_load_failure_policy: "fail" },
      trustRemoteCode: false,
      dsRequired: false,
      model,
      tokenizer: model,
      ...over,
    };
    const r = spawnSync(PYTHON, ["-c", RUNTIME_CHECK_PY, JSON.stringify(request)], { encoding: "utf8", env: { PATH: "/usr/bin:/bin", HOME: home, ...env } });
    return { status: r.status, lines: Object.fromEntries(parseCheckLines(r.stdout).map((l) => [l.check, l])) };
  }

  it("passes, reporting the sim config's version as vllm_api_version and package version", () => {
    const { status, lines } = run();
    expect(status).to.equal(0);
    expect(Object.keys(lines)).to.deep.equal(["custom-code", "packages", "vllm-api-version", "connector", "ds-layout", "tokenizer", "nixl-versions"]);
    expect(lines["vllm-api-version"]).to.deep.equal({ check: "vllm-api-version", ok: true, version: "0.29.4" });
    expect(lines.packages).to.deep.include({ ok: true, observed: { vllm: "0.29.4" } });
  });

  it("runs every check after one fails, and exits 1", () => {
    const { status, lines } = run({ pins: { vllm: "0.29.4", torch: "2.9.0" }, kvTransferConfig: { kv_connector: "LMCacheConnectorV1", kv_role: "kv_both" } });
    expect(status).to.equal(1);
    expect(lines.packages).to.deep.include({ ok: false, mismatches: [{ package: "torch", expected: "2.9.0", found: null }] });
    expect(lines.connector).to.deep.equal({ check: "connector", ok: false, error: "ValueError: Unsupported connector type: LMCacheConnectorV1" });
    expect(lines.tokenizer).to.deep.include({ ok: true });
  });

  it("refuses a custom-code tokenizer without trust_remote_code, and loads it with it", () => {
    const tokConfig = path.join(model, "tokenizer_config.json");
    fs.writeFileSync(tokConfig, JSON.stringify({ ...JSON.parse(fs.readFileSync(tokConfig, "utf8")), auto_map: { AutoTokenizer: ["tok.Tok", null] } }));
    const refused = run();
    expect(refused.lines["custom-code"]).to.deep.include({ ok: false, required: true, trusted: false, reasons: [`${model}/tokenizer_config.json has auto_map`] });
    expect(String(refused.lines.tokenizer.error)).to.match(/^ValueError: The repository .* contains custom code which must be executed to correctly load the model\./);
    expect(run({ trustRemoteCode: true }).status).to.equal(0);
  });

  it("resolves the conv-state layout from the environment only when the model needs DS", () => {
    expect(run({ dsRequired: true }).lines["ds-layout"]).to.deep.equal({ check: "ds-layout", ok: false, required: true, layout: "SD" });
    expect(run({ dsRequired: true }, { VLLM_SSM_CONV_STATE_LAYOUT: "DS" }).lines["ds-layout"]).to.deep.equal({ check: "ds-layout", ok: true, required: true, layout: "DS" });
  });

  it("reports a Python without vllm check by check", () => {
    const { status, lines } = run({}, {}, path.join(tmp, "elsewhere"));
    expect(status).to.equal(1);
    expect(lines.packages).to.deep.include({ ok: false, mismatches: [{ package: "vllm", expected: "0.29.4", found: null }] });
    expect(lines["vllm-api-version"]).to.deep.equal({ check: "vllm-api-version", ok: false, error: "ModuleNotFoundError: No module named 'vllm'" });
  });

  it("reads the NIXL versions the simulated runtime carries: vLLM 0.29.0's connector version from its source, nixl from its dist-info", () => {
    const v1 = path.resolve(__dirname, "../../../sim/python/vllm/distributed/kv_transfer/kv_connector/v1");
    expect(run().lines["nixl-versions"]).to.deep.equal({
      check: "nixl-versions",
      ok: true,
      connectorVersion: 9,
      connectorSource: path.join(v1, "nixl", "metadata.py"),
      searched: v1,
      nixlVersion: "0.7.1",
      nixlDistribution: "nixl",
    });
    // The engine simulator hashes the same version into its NIXL handshake.
    expect(NIXL_CONNECTOR_VERSION).to.equal(9);
  });

  /** A vllm package of its own (only the files the check reads) ahead of the simulated one on the path. */
  function otherVllm(files: Record<string, string>): Record<string, string> {
    const dir = path.join(tmp, "other");
    for (const [name, text] of Object.entries({ "vllm/__init__.py": "", ...files })) {
      fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
      fs.writeFileSync(path.join(dir, name), text);
    }
    return { PYTHONPATH: dir };
  }

  it("finds the constant of an older layout by its assignment line, and reads no value it would have to run", () => {
    const v1 = path.join(tmp, "other", "vllm", "distributed", "kv_transfer", "kv_connector", "v1");
    const old = run({}, otherVllm({ "vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py": "import torch\n\nNIXL_CONNECTOR_VERSION: int = 2\n" }));
    expect(old.lines["nixl-versions"]).to.deep.include({ ok: true, connectorVersion: 2, connectorSource: path.join(v1, "nixl_connector.py") });
    const computed = run({}, otherVllm({ "vllm/distributed/kv_transfer/kv_connector/v1/nixl/metadata.py": "import os\nNIXL_CONNECTOR_VERSION = int(os.environ['X'])\n" }));
    expect(computed.status).to.equal(1);
    expect(String(computed.lines["nixl-versions"].error)).to.match(/^ValueError: malformed node or string/);
  });

  it("fails without the constant or without a nixl distribution, naming what it searched", () => {
    const v1 = path.join(tmp, "other", "vllm", "distributed", "kv_transfer", "kv_connector", "v1");
    const none = run({}, otherVllm({ "vllm/distributed/kv_transfer/kv_connector/v1/nixl/metadata.py": "VERSION = 9\n" }));
    expect(none.status).to.equal(1);
    expect(none.lines["nixl-versions"]).to.deep.equal({ check: "nixl-versions", ok: false, connectorVersion: null, connectorSource: null, searched: v1, nixlVersion: "0.7.1", nixlDistribution: "nixl" });
    const zero = run({}, otherVllm({ "vllm/distributed/kv_transfer/kv_connector/v1/nixl/metadata.py": "NIXL_CONNECTOR_VERSION: int = 0\n" }));
    expect(zero.lines["nixl-versions"]).to.deep.include({ ok: false, connectorVersion: null });
    // Without the simulated site only the other vllm is on the path, and no nixl distribution at all.
    const noNixl = run({}, otherVllm({ "vllm/distributed/kv_transfer/kv_connector/v1/nixl/metadata.py": "NIXL_CONNECTOR_VERSION: int = 9\n" }), path.join(tmp, "elsewhere"));
    expect(noNixl.lines["nixl-versions"]).to.deep.include({ ok: false, connectorVersion: 9, nixlVersion: null, nixlDistribution: null });
    const bare = run({}, {}, path.join(tmp, "elsewhere"));
    expect(bare.lines["nixl-versions"]).to.deep.equal({ check: "nixl-versions", ok: false, error: "ModuleNotFoundError: No module named 'vllm'" });
  });

  it("is installed into root's and narwhal's user site of a host, once", () => {
    const p = { rootHome: path.join(tmp, "root"), homeDir: path.join(tmp, "homes"), simConfig: path.join(tmp, "sim-config.json"), pythonSite: path.join(tmp, "python") } as HostPaths;
    fs.mkdirSync(p.rootHome);
    fs.mkdirSync(path.join(p.homeDir, "narwhal"), { recursive: true });
    fs.chownSync(path.join(p.homeDir, "narwhal"), 1500, 1500);
    const site = (home: string) => path.join(home, ".local", "lib", `python${pythonVersion}`, "site-packages", PTH_NAME);
    expect(writeSimPythonSite(p)).to.deep.equal([site(p.rootHome), site(path.join(p.homeDir, "narwhal"))]);
    expect(fs.readFileSync(site(p.rootHome), "utf8")).to.equal(pthText(p.simConfig));
    expect(fs.statSync(site(path.join(p.homeDir, "narwhal"))).uid).to.equal(1500);
    expect(fs.statSync(path.join(p.homeDir, "narwhal", ".local")).uid).to.equal(1500);
    expect(writeSimPythonSite(p), "unchanged files are left alone").to.deep.equal([]);
  });
});

/**
 * The one shell function discovery's probe and the image check both use to read a host's vLLM command,
 * run here by this machine's shells against launchers of every kind in a temporary folder.
 */
import { expect } from "chai";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { VLLM_EXECUTABLE_SH } from "../../../lib/runtime/vllm-executable";

const PYTHON = "/usr/bin/python3";
const shells = ["dash", "bash"].filter((s) => spawnSync("sh", ["-c", `command -v ${s}`]).status === 0);

describe("vllm_executable: where a host's vLLM command resolves, and which Python runs it", () => {
  let tmp = "";
  beforeEach(() => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), "vllm-executable-"));
    fs.mkdirSync(path.join(tmp, "bin"));
  });
  afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

  const script = (file: string, text: string) => fs.writeFileSync(file, text, { mode: 0o755 });

  function resolve(shell: string, command = "vllm") {
    const r = spawnSync(shell, ["-s", "--", command], {
      input: `set -u\n${VLLM_EXECUTABLE_SH}vllm_executable "$1"\nprintf '%s|%s|%s|%s\\n' "$_v_found" "$_v_path" "$_v_kind" "$_v_py"\n`,
      encoding: "utf8",
      env: { PATH: `${tmp}/bin:/usr/bin:/bin`, HOME: tmp },
    });
    expect(r.status, r.stderr).to.equal(0);
    const [found, resolved, kind, py] = r.stdout.trim().split("|");
    return { found, path: resolved, kind, py };
  }

  it("has a shell to run under", () => expect(shells).to.not.deep.equal([]));

  for (const shell of shells) {
    describe(shell, () => {
      it("follows a symlinked console script to its venv and takes the python3 beside it", () => {
        fs.mkdirSync(path.join(tmp, "venv", "bin"), { recursive: true });
        fs.symlinkSync(PYTHON, path.join(tmp, "venv", "bin", "python3"));
        script(path.join(tmp, "venv", "bin", "vllm"), "#!/opt/elsewhere/python3\nprint('0.29.0')\n");
        fs.symlinkSync(path.join(tmp, "venv", "bin", "vllm"), path.join(tmp, "bin", "vllm"));
        expect(resolve(shell)).to.deep.equal({ found: path.join(tmp, "bin", "vllm"), path: path.join(tmp, "venv", "bin", "vllm"), kind: "python", py: path.join(tmp, "venv", "bin", "python3") });
      });

      it("takes the interpreter a #!/usr/bin/env line names, and the one pip's '''exec' launcher names", () => {
        script(path.join(tmp, "bin", "vllm"), "#!/usr/bin/env python3\nprint('0.29.0')\n");
        expect(resolve(shell)).to.deep.include({ kind: "python", py: PYTHON });
        script(path.join(tmp, "bin", "vllm"), `#!/bin/sh\n'''exec' "${PYTHON}" "$0" "$@"\n' '''\nprint("0.29.0")\n`);
        expect(resolve(shell)).to.deep.include({ kind: "python", py: PYTHON });
      });

      it("names no interpreter for a console script whose Python is gone", () => {
        script(path.join(tmp, "bin", "vllm"), "#!/opt/gone/bin/python3\nprint('0.29.0')\n");
        expect(resolve(shell)).to.deep.include({ kind: "python", py: "" });
      });

      it("tells shell wrappers, other scripts and binaries apart, with no interpreter of their own", () => {
        script(path.join(tmp, "bin", "vllm"), "#!/bin/sh\nexec /opt/vllm/bin/vllm \"$@\"\n");
        expect(resolve(shell)).to.deep.include({ kind: "shell", py: "" });
        script(path.join(tmp, "bin", "vllm"), "#!/usr/bin/perl\nprint 1;\n");
        expect(resolve(shell)).to.deep.include({ kind: "other-script", py: "" });
        fs.copyFileSync("/bin/true", path.join(tmp, "bin", "vllm"));
        expect(resolve(shell)).to.deep.include({ kind: "binary", py: "" });
      });

      it("says missing when the login's PATH has no such command", () => {
        expect(resolve(shell)).to.deep.equal({ found: "", path: "", kind: "missing", py: "" });
      });
    });
  }
});

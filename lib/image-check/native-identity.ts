import { VLLM_EXECUTABLE_SH } from "../runtime/vllm-executable";
/**
 * The native runtime's identity, read on the host by one POSIX sh script (`sh -s -- <vllmCommand>`,
 * script on stdin): where the command resolves, the SHA-256 of that file, what `--version` prints, and
 * which Python runs the runtime check.
 *
 * The command and its interpreter are found as discovery finds them (lib/runtime/vllm-executable.ts): for a
 * pip console script the `python3` beside it, else the one its `#!` line (or pip's `'''exec'` line) names. A launcher that is not
 * a Python console script (a wrapper script, a binary) has no interpreter of its own, so the login's
 * `python3` runs the check; the identity check then requires that Python's vLLM to report the same version
 * as the launcher, so a check of some other environment cannot pass.
 */

export const NATIVE_IDENTITY_SH = `
set -u
bounded() {
  _b_secs=$1; shift
  if command -v timeout >/dev/null 2>&1; then timeout "$_b_secs" "$@" </dev/null; else "$@" </dev/null; fi
}
${VLLM_EXECUTABLE_SH}identity_main() {
  printf 'command %s\\n' "$1"
  vllm_executable "$1"
  if [ "$_v_kind" = missing ]; then echo "script missing"; return 0; fi
  printf 'path %s\\n' "$_v_path"
  _sum=$(sha256sum <"$_v_path" 2>/dev/null | cut -d' ' -f1) || _sum=
  printf 'sha256 %s\\n' "\${_sum:--}"
  _kind=$_v_kind; _py=$_v_py
  _source=console-script
  if [ "$_kind" != python ]; then
    _source=login-python3
    _py=$(command -v python3 2>/dev/null) || _py=
  fi
  printf 'script %s\\n' "$_kind"
  printf 'interpreter %s\\n' "\${_py:--}"
  printf 'interpreter_source %s\\n' "$_source"
  _out=$(bounded "$2" "$_v_found" --version 2>&1); _rc=$?
  printf 'version_rc %s\\n' "$_rc"
  printf '@@version\\n%s\\n' "$_out"
}
identity_main "$@"
`;

export type NativeScriptKind = "python" | "shell" | "other-script" | "binary" | "missing";

export interface NativeIdentity {
  readonly command: string;
  /** Where the command resolved (symlinks followed), or null when it is not on the login's PATH. */
  readonly path: string | null;
  /** `sha256:<hex>` of the resolved file's bytes. */
  readonly sha256: string | null;
  readonly scriptKind: NativeScriptKind;
  /** The Python that runs the runtime check; null when none was found. */
  readonly interpreter: string | null;
  /** Whether the interpreter belongs to the console script, or is the login's python3 (see the module comment). */
  readonly interpreterSource: "console-script" | "login-python3";
  readonly versionExit: number | null;
  /** What `<command> --version` printed (stdout and stderr). */
  readonly versionOutput: string;
}

const KINDS: ReadonlyArray<NativeScriptKind> = ["python", "shell", "other-script", "binary", "missing"];

/** Reads the identity script's output: `key value` lines, then everything after `@@version`. */
export function parseNativeIdentity(stdout: string, command: string): NativeIdentity {
  const at = stdout.indexOf("\n@@version\n");
  const head = at >= 0 ? stdout.slice(0, at) : stdout;
  const values = new Map<string, string>();
  for (const line of head.split("\n")) {
    const m = /^(\S+) ?(.*)$/.exec(line);
    if (m && !values.has(m[1])) values.set(m[1], m[2]);
  }
  const value = (k: string) => {
    const v = values.get(k);
    return v === undefined || v === "" || v === "-" ? null : v;
  };
  const script = value("script");
  const kind = (KINDS as ReadonlyArray<string>).includes(script ?? "") ? (script as NativeScriptKind) : "missing";
  const rc = Number(value("version_rc"));
  return {
    command,
    path: value("path"),
    sha256: value("sha256") && /^[0-9a-f]{64}$/.test(value("sha256")!) ? `sha256:${value("sha256")}` : null,
    scriptKind: kind,
    interpreter: value("interpreter"),
    interpreterSource: value("interpreter_source") === "console-script" ? "console-script" : "login-python3",
    versionExit: value("version_rc") !== null && Number.isInteger(rc) ? rc : null,
    versionOutput: at >= 0 ? stdout.slice(at + "\n@@version\n".length).replace(/\n$/, "") : "",
  };
}

/**
 * How a host's vLLM command is read, for discovery's runtime probe (lib/discovery/probe.ts) and the image
 * check's native identity (lib/image-check/native-identity.ts), which must find the same file and the same
 * Python. POSIX sh, pasted into each script; each prints what it found in its own words.
 *
 * `vllm_executable <command>` sets:
 * - `_v_found`: where the login's PATH resolves the command (empty when it does not);
 * - `_v_path`: that file with symlinks followed;
 * - `_v_kind`: python (a Python console script, pip's `'''exec'` launcher included), shell, other-script,
 *   binary, or missing;
 * - `_v_py`: for a Python console script, the interpreter that runs it (the `python3` beside it, else the
 *   one its `#!` or `'''exec'` line names), when that is an executable; empty otherwise.
 */
export const VLLM_EXECUTABLE_SH = `shebang_python() {
  _s_words=\${1#??}
  set -f; set -- $_s_words; set +f
  case "\${1:-}" in
    */env) if [ -n "\${2:-}" ]; then command -v "$2" 2>/dev/null; fi ;;
    /*) printf '%s\\n' "$1" ;;
  esac
}
vllm_executable() {
  _v_path=; _v_kind=missing; _v_py=
  _v_found=$(command -v "$1" 2>/dev/null) || _v_found=
  case "$_v_found" in /*) ;; *) return 0 ;; esac
  _v_path=$(readlink -f "$_v_found" 2>/dev/null) || _v_path=
  [ -n "$_v_path" ] || _v_path=$_v_found
  _v_kind=binary
  if [ "$(head -c 2 "$_v_path" 2>/dev/null)" = '#!' ]; then
    _v_l1=$(head -n 1 "$_v_path" | head -c 300)
    _v_l2=$(sed -n 2p "$_v_path" | head -c 300)
    case "$_v_l1" in
      *python*) _v_kind=python; _v_py=$(shebang_python "$_v_l1") ;;
      *sh|*sh\\ *)
        # pip's console script for a long interpreter path: #!/bin/sh, then '''exec' "/path/python" "$0" "$@"
        case "$_v_l2" in
          "'''exec' \\""*) _v_kind=python; _v_py=\${_v_l2#*\\"}; _v_py=\${_v_py%%\\"*} ;;
          *) _v_kind=shell ;;
        esac ;;
      *) _v_kind=other-script ;;
    esac
  fi
  if [ "$_v_kind" = python ]; then
    # The interpreter next to the console script is the environment vllm runs in.
    _v_dir=$(dirname "$_v_path")
    for _v_c in "$_v_dir/python3" "$_v_dir/python"; do
      if [ -x "$_v_c" ]; then _v_py=$_v_c; break; fi
    done
    case "$_v_py" in /*) [ -x "$_v_py" ] || _v_py= ;; *) _v_py= ;; esac
  fi
}
`;

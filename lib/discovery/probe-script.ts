/**
 * The one script discovery runs on a host per login. It prints labelled `@@section` blocks that
 * `parseProbe` reads, so the remote side needs only a POSIX shell and the tools it inspects: `ip`, the
 * vendor's GPU tool, `ss`, `base64`/`sha256sum` for checkpoint files, and the runtime (vllm or docker).
 *
 * Arguments (all optional after $1; `probeCommand` quotes every one with `shq`):
 *   $1 fabric interface   $2 checkpoint dir   $3 max bytes per checkpoint file
 *   $4 runtime kind (native | docker | none)  $5 vllm command or image reference
 *   $6 docker command     $7 name of the short-lived package-reading container
 *   $8... declared device paths
 *
 * Every external command reads /dev/null, never the script (which arrives on stdin), and the whole
 * script is one function, parsed before anything runs.
 */
import { VLLM_EXECUTABLE_SH } from "../runtime/vllm-executable";
import { RDMA_SH, rdmaSysfsCall } from "./rdma";

export const PROBE_SCRIPT = `
set -u
section() { printf '\\n@@%s\\n' "$1"; }

# bounded <seconds> <command...>: under timeout(1) when the host has it; stdin is /dev/null.
bounded() {
  _b_secs=$1; shift
  if command -v timeout >/dev/null 2>&1; then timeout "$_b_secs" "$@" </dev/null; else "$@" </dev/null; fi
}

# capture <name> <seconds> <command...>: stdout in @@name, the stderr tail in @@name_err, the exit code in
# @@name_rc (and in $_rc).
capture() {
  _c_name=$1; shift
  section "$_c_name"
  { _c_err=$(bounded "$@" 2>&1 1>&3 3>&-); _rc=$?; } 3>&1
  section "\${_c_name}_err"
  if [ -n "$_c_err" ]; then printf '%s\\n' "$_c_err" | tail -n 20; fi
  section "\${_c_name}_rc"
  echo "$_rc"
}

PYMETA='import json, importlib.metadata as m; print(json.dumps([{"name": d.metadata["Name"], "version": d.version} for d in m.distributions() if d.metadata["Name"]]))'

# model_file <section> <path> <max bytes>: a status line, then the exact bytes in base64.
model_file() {
  section "$1"
  if [ ! -e "$2" ]; then echo missing
  elif [ ! -f "$2" ]; then echo notafile
  elif [ ! -r "$2" ]; then echo unreadable
  else
    _m_size=$(wc -c <"$2" | tr -d ' ')
    if [ "$_m_size" -gt "$3" ]; then echo "toolarge $_m_size"
    elif ! command -v base64 >/dev/null 2>&1; then echo nobase64
    else
      _m_sum=$(sha256sum <"$2" 2>/dev/null | cut -d' ' -f1)
      echo "file $_m_size \${_m_sum:--}"
      base64 <"$2"
    fi
  fi
}

model_probe() {
  section model
  if [ -z "$1" ]; then echo skipped; return 0; fi
  if [ -d "$1" ]; then echo "dir present"; else echo "dir missing"; return 0; fi
  for _m_extra in chat_template.jinja chat_template.json; do
    if [ -f "$1/$_m_extra" ]; then echo "extra $_m_extra"; fi
  done
  model_file model_config "$1/config.json" "$2"
  model_file model_tokenizer_config "$1/tokenizer_config.json" "$2"
  model_file model_generation_config "$1/generation_config.json" "$2"
}

listeners_probe() {
  if command -v ss >/dev/null 2>&1; then
    capture listeners 20 ss -ltnpH
    # iproute2 before 4.x has no -H; the parser skips the header line.
    if [ "$_rc" -ne 0 ]; then capture listeners 20 ss -ltnp; fi
  else
    section listeners_err; echo "ss: command not found (install iproute2)"
    section listeners_rc; echo 127
  fi
}

# devices_probe <section> <path>...: each path present (with its stat) or missing.
devices_probe() {
  section "$1"; shift
  for _d_path in "$@"; do
    if [ -e "$_d_path" ]; then
      if _d_stat=$(stat -L -c '%a\t%U\t%G\t%F' "$_d_path" 2>/dev/null); then
        printf 'present\\t%s\\t%s\\n' "$_d_path" "$_d_stat"
      else
        printf 'present\\t%s\\n' "$_d_path"
      fi
    else
      printf 'missing\\t%s\\n' "$_d_path"
    fi
  done
}

# The render nodes sysfs shows, each with the PCI function its device link resolves to, then the ROCm
# device nodes checked like the declared ones: /dev/kfd and /dev/dri/<each render node>.
gpu_nodes_probe() {
  section drm
  for _g_d in /sys/class/drm/renderD*; do
    [ -e "$_g_d" ] || continue
    printf '%s\\t%s\\n' "\${_g_d##*/}" "$(readlink -f "$_g_d/device" 2>/dev/null)"
  done
  set -- /dev/kfd
  for _g_d in /sys/class/drm/renderD*; do
    if [ -e "$_g_d" ]; then set -- "$@" "/dev/dri/\${_g_d##*/}"; fi
  done
  devices_probe gpu_devices "$@"
}

${VLLM_EXECUTABLE_SH}
${RDMA_SH}
runtime_native() {
  section runtime
  echo "kind native"
  printf 'command %s\\n' "$1"
  vllm_executable "$1"
  if [ "$_v_kind" = missing ]; then echo "script missing"; return 0; fi
  printf 'path %s\\n' "$_v_path"
  printf 'script %s\\n' "$_v_kind"
  printf 'interpreter %s\\n' "\${_v_py:--}"
  capture runtime_version 120 "$_v_found" --version
  if [ -n "$_v_py" ]; then
    capture runtime_packages 120 "$_v_py" -m pip list --format json --disable-pip-version-check
    if [ "$_rc" -ne 0 ]; then capture runtime_packages_meta 60 "$_v_py" -c "$PYMETA"; fi
  fi
}

runtime_docker() {
  section runtime
  echo "kind docker"
  printf 'image %s\\n' "$1"
  _k_docker=$(command -v "$2" 2>/dev/null) || _k_docker=
  case "$_k_docker" in /*) ;; *) echo "docker missing"; return 0 ;; esac
  printf 'docker %s\\n' "$_k_docker"
  capture runtime_inspect 60 "$_k_docker" image inspect --format '{{json .}}' -- "$1"
  [ "$_rc" -eq 0 ] || return 0
  _k_id=$(bounded 60 "$_k_docker" image inspect --format '{{.Id}}' -- "$1" 2>/dev/null) || _k_id=
  section runtime_image_id
  printf '%s\\n' "\${_k_id:--}"
  [ -n "$_k_id" ] || return 0
  # A short-lived container of exactly that image ID reads its package metadata and exits.
  capture runtime_packages 180 "$_k_docker" run --rm --pull never --network none --name "$3" --entrypoint python3 "$_k_id" -m pip list --format json --disable-pip-version-check
  if [ "$_rc" -eq 124 ]; then "$_k_docker" rm -f -v "$3" >/dev/null 2>&1 </dev/null; fi
  if [ "$_rc" -ne 0 ]; then
    capture runtime_packages_meta 120 "$_k_docker" run --rm --pull never --network none --name "$3" --entrypoint python3 "$_k_id" -c "$PYMETA"
    if [ "$_rc" -eq 124 ]; then "$_k_docker" rm -f -v "$3" >/dev/null 2>&1 </dev/null; fi
  fi
}

probe_main() {
  _p_iface=\${1-}; _p_model=\${2-}; _p_max=\${3:-4194304}; _p_kind=\${4:-none}; _p_ref=\${5-}; _p_tool=\${6:-docker}; _p_name=\${7:-narwhal-probe-$$}
  if [ "$#" -ge 7 ]; then shift 7; else set --; fi
  section hostname; hostname
  section pci
  for d in /sys/bus/pci/devices/*; do
    [ -r "$d/class" ] && printf '%s %s %s\\n' "\${d##*/}" "$(cat "$d/class")" "$(cat "$d/vendor")"
  done
  section nvidia
  command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi --query-gpu=index,name,pci.bus_id,uuid,memory.total --format=csv,noheader
  section rocm
  command -v rocminfo >/dev/null 2>&1 && rocminfo
  section fabric
  if [ -n "$_p_iface" ]; then ip -o addr show dev "$_p_iface" scope global 2>&1; fi
  model_probe "$_p_model" "$_p_max"
  ${rdmaSysfsCall({}).split("\n").join("\n  ")}
  listeners_probe
  devices_probe devices "$@"
  gpu_nodes_probe
  case "$_p_kind" in
    native) runtime_native "$_p_ref" ;;
    docker) runtime_docker "$_p_ref" "$_p_tool" "$_p_name" ;;
    *) section runtime; echo "kind none" ;;
  esac
  section end
}

probe_main "$@"
`;

export type ProbeSections = Record<string, string>;

/** Splits the probe's output into its labelled sections. */
export function splitSections(output: string): ProbeSections {
  const sections: ProbeSections = {};
  let current: string | undefined;
  for (const line of output.split("\n")) {
    const m = /^@@(\w+)$/.exec(line);
    if (m) {
      current = m[1];
      sections[current] = "";
    } else if (current) {
      sections[current] += line + "\n";
    }
  }
  return sections;
}

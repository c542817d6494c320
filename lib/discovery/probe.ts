/**
 * The one script discovery runs on a host per login. It prints labelled sections that `parseProbe`
 * reads, so the remote side needs only a POSIX shell, `ip` and the vendor's GPU tool.
 * Arguments: $1 = fabric interface.
 */
export const PROBE_SCRIPT = `
set -u
section() { printf '\\n@@%s\\n' "$1"; }
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
ip -o addr show dev "$1" scope global 2>&1
section end
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

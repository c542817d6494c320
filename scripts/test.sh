#!/usr/bin/env bash
# Runs one test layer, or all of them, after making sure the toolchain and packages are installed.
#   unit       pure logic in lib/ and the engine simulator (no network beyond loopback)
#   mocks      components under pulumi.runtime.setMocks (resource shape only)
#   providers  dynamic providers and the command provider against the simulated fleet
#   e2e        the real Pulumi CLI through the Automation API against the simulated fleet
set -euo pipefail
. "$(dirname "$0")/env.sh"
cd "$NARWHAL_ROOT"
layer="${1:-all}"

bash scripts/setup.sh

# The CLI runs the program as JavaScript from a compile cache (tools/ts-require.js) without checking
# its types; tsc checks the whole tree once below instead, before any layer that drives the CLI.

# e2e files whose stacks live on hosts no other e2e file touches (sim5, simdock): they run in a second
# mocha process beside the files on the shared fleet, so the CLI's waits for engines and probes overlap
# instead of adding up. (sim3 is not among them: the access file's engines run there too.)
OWN_HOSTS_E2E=(test/e2e/docker-cli.test.ts test/e2e/peer-wave.test.ts)

parts=$(mktemp -d)
trap 'rm -rf "$parts"' EXIT

# One mocha run as a part of this test run: its totals go to $parts/<name>.json.
part() {
  local name=$1
  shift
  NARWHAL_TEST_TOTALS="$parts/$name.json" mocha --reporter scripts/mocha-reporter.js "$@"
}

# The e2e layer: the shared-fleet files here, the own-host files beside them (their output follows).
e2e() {
  local own_log="$parts/own-hosts.log" own_status=0 status=0
  part e2e-own-hosts "${OWN_HOSTS_E2E[@]}" >"$own_log" 2>&1 &
  local own=$!
  local shared=()
  for f in test/e2e/*.test.ts; do [[ " ${OWN_HOSTS_E2E[*]} " == *" $f "* ]] || shared+=("$f"); done
  part e2e-shared "${shared[@]}" || status=$?
  wait "$own" || own_status=$?
  printf '\n==> e2e files on hosts of their own (ran beside the shared fleet)\n'
  cat "$own_log"
  return $((status || own_status))
}

# The one closing line CI reads, over every part that ran.
totals() {
  node -e '
    const fs = require("node:fs"), path = require("node:path");
    const t = { passes: 0, failures: 0, pending: 0 };
    for (const f of fs.readdirSync(process.argv[1]).filter((f) => f.endsWith(".json"))) {
      const p = JSON.parse(fs.readFileSync(path.join(process.argv[1], f), "utf8"));
      for (const k of Object.keys(t)) t[k] += p[k];
    }
    console.log(`\n${t.passes} passed, ${t.failures} failed, ${t.pending} skipped`);
  ' "$parts"
}

status=0
case "$layer" in
  unit|mocks|providers) part "$layer" "test/$layer/**/*.test.ts" || status=$? ;;
  e2e)
    tsc --noEmit -p .
    e2e || status=$? ;;
  all)
    tsc --noEmit -p .
    (cd tools/command-provider && GOFLAGS=-mod=mod go test ./...)
    part layers "test/unit/**/*.test.ts" "test/mocks/**/*.test.ts" "test/providers/**/*.test.ts" || status=$?
    e2e || status=$? ;;
  *) echo "usage: scripts/test.sh [unit|mocks|providers|e2e|all]" >&2; exit 2 ;;
esac
totals
exit "$status"

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

case "$layer" in
  unit|mocks|providers) specs=("test/$layer/**/*.test.ts") ;;
  e2e)
    tsc --noEmit -p .
    specs=("test/e2e/**/*.test.ts") ;;
  all)
    tsc --noEmit -p .
    (cd tools/command-provider && GOFLAGS=-mod=mod go test ./...)
    specs=("test/unit/**/*.test.ts" "test/mocks/**/*.test.ts" "test/providers/**/*.test.ts" "test/e2e/**/*.test.ts") ;;
  *) echo "usage: scripts/test.sh [unit|mocks|providers|e2e|all]" >&2; exit 2 ;;
esac
exec mocha --reporter scripts/mocha-reporter.js "${specs[@]}"

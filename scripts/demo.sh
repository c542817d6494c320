#!/usr/bin/env bash
# From nothing to a deployed fleet on the simulated hosts: setup, simulated fleet, `pulumi up`, outputs.
set -euo pipefail
. "$(dirname "$0")/env.sh"
cd "$NARWHAL_ROOT"

bash scripts/setup.sh
printf '\n==> Simulated fleet\n'
ts-node --transpile-only sim/cli.ts up
printf '\n==> pulumi up (stack dev)\n'
pulumi stack select dev
pulumi up --yes --skip-preview
printf '\n==> Stack outputs\n'
pulumi stack output --json

#!/usr/bin/env bash
# From nothing to a serving router on the simulated hosts: setup, simulated fleet, `pulumi up`, outputs,
# one request through the router, and the sanitised deployment record. Exits non-zero at the first failure.
set -euo pipefail
. "$(dirname "$0")/env.sh"
cd "$NARWHAL_ROOT"

bash scripts/setup.sh
printf '\n==> Simulated fleet\n'
# Half speed: the profiles' decode fits and the preflight's limits need decode steps of milliseconds,
# not the default scale's tenths of one (the e2e fleet runs at the same scale).
node -r ./tools/ts-require.js sim/cli.ts up --time-scale 0.5
printf '\n==> pulumi up (stack dev)\n'
pulumi stack select dev
pulumi up --stack dev --yes --skip-preview --refresh
printf '\n==> Stack outputs\n'
pulumi stack output --stack dev --json
printf '\n==> Preflight, as narwhal-check decides it (pass, degraded or fail)\n'
pulumi stack output --stack dev preflight --json | node -e 'const p = JSON.parse(require("fs").readFileSync(0, "utf8")); console.log(`status: ${p.status}`); for (const s of p.skipped) console.log(`skipped: ${s.gate} (${s.message})`)'
printf '\n==> One request through the router\n'
node -r ./tools/ts-require.js scripts/router-request.ts "$(pulumi stack output --stack dev routerUrl)"
printf '\n==> Capacity trial, through an SSH tunnel to the router\n'
pulumi stack output --stack dev capacity --json | node -r ./tools/ts-require.js scripts/capacity-lines.ts
printf '\n==> Sanitised deployment record\n'
out="$NARWHAL_ROOT/runs/dev/export-$(date -u +%Y%m%dT%H%M%SZ)"
node -r ./tools/ts-require.js scripts/export-record.ts --stack dev --out "$out"

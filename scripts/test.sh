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
case "$layer" in
  unit|mocks|providers|e2e|all) ;;
  *) echo "usage: scripts/test.sh [unit|mocks|providers|e2e|all]" >&2; exit 2 ;;
esac

# The simulated hosts' bridge and namespaces belong to the machine, not to this checkout: a second suite
# on the same machine, from any clone, would see them as strays and take them down. The layers that bring
# hosts up therefore run one suite at a time, waiting a bounded time for their turn. flock -o keeps the
# lock with flock itself, so no engine or sshd a test leaves running can hold it after the suite ends.
sim_hosts_lock="${NARWHAL_SIM_HOSTS_LOCK:-/run/lock/narwhal-fleet-sim-hosts.lock}"
if [ "$layer" != unit ] && [ "$layer" != mocks ] && [ -z "${NARWHAL_SIM_HOSTS_LOCKED:-}" ]; then
  wait_s="${NARWHAL_SIM_HOSTS_LOCK_WAIT_S:-3600}"
  if ! flock -n -o "$sim_hosts_lock" true; then
    echo "scripts/test.sh: another suite on this machine has the simulated hosts ($(cat "$sim_hosts_lock.holder" 2>/dev/null || echo "holder unknown")); waiting up to ${wait_s} s (NARWHAL_SIM_HOSTS_LOCK_WAIT_S)" >&2
  fi
  rc=0
  flock -o -w "$wait_s" -E 75 "$sim_hosts_lock" env NARWHAL_SIM_HOSTS_LOCKED=1 bash "$0" "$@" || rc=$?
  if [ "$rc" = 75 ]; then
    echo "scripts/test.sh: the simulated hosts were still held after ${wait_s} s by $(cat "$sim_hosts_lock.holder" 2>/dev/null || echo "another suite"); let that run finish or stop it, then run again" >&2
  fi
  exit "$rc"
fi
if [ -n "${NARWHAL_SIM_HOSTS_LOCKED:-}" ]; then
  echo "pid $$, layer $layer, in $NARWHAL_ROOT" >"$sim_hosts_lock.holder"
fi

bash scripts/setup.sh

# e2e files whose stacks live on simulated hosts of their own, never on the shared fleet (sim1-sim4): they
# run in a second mocha beside the other e2e files. An e2e test spends most of its time waiting on engines
# and sshd, not on the CPU, so two lanes finish well before one would.
OWN_HOSTS_E2E=(
  test/e2e/faults.test.ts          # sim5, sim8
  test/e2e/failure-paths.test.ts   # sim13, sim14
  test/e2e/policy-pack.test.ts     # sim11
  test/e2e/docker-cli.test.ts      # simdock
  test/e2e/fabric-rdma.test.ts     # sim40, sim41 (with HCAs)
  test/e2e/runbook-adopt.test.ts   # sim15 (AMD)
  test/e2e/engine-scope.test.ts    # sim16 (NIXL 1.5.0)
)

# Provider files that bring up simulated hosts, take the harness down, or use Docker: they run in one
# mocha beside the other provider files, which start their engines, routers and sshd on loopback only.
# Each provider test waits on the processes it starts for about half its time, so two lanes share the
# cores well.
SIM_HOSTS_PROVIDERS=(
  test/providers/cache-capture.test.ts test/providers/checkpoint.test.ts test/providers/command-record.test.ts
  test/providers/discovery-probe.test.ts test/providers/docker-cli.test.ts test/providers/engine-generation.test.ts
  test/providers/files-presence.test.ts
  test/providers/fabric-edge.test.ts test/providers/fabric-edge-rdma.test.ts test/providers/fabric-edge-reservation.test.ts
  test/providers/host-discovery.test.ts test/providers/host-discovery-rdma.test.ts test/providers/image-check.test.ts
  test/providers/liveness.test.ts test/providers/monitoring-port-check.test.ts test/providers/narwhal-install.test.ts
  test/providers/preflight-agreement.test.ts test/providers/rocm-devices.test.ts test/providers/sim-docker-host.test.ts
  test/providers/sim-harness.test.ts test/providers/sim-harness-lifecycle.test.ts test/providers/sim-rdma.test.ts
  test/providers/ssh-client.test.ts
  # on loopback, but here they even the two lanes: the command provider's sshd and Pulumi stacks make it
  # the longest file, and the router's real narwhal-serve the third longest; the rollout's CLI runs too
  test/providers/command-provider.test.ts test/providers/router.test.ts test/providers/rollout-record.test.ts
)

logs=$(mktemp -d)
# The suite leaves nothing running: the simulated hosts the providers and e2e layers bring up, and all
# that runs on them (engines, sidecars, routers, Prometheus), go when it ends, passed or failed.
# NARWHAL_KEEP_SIM=1 keeps them for a faster rerun (docs/testing.md).
finish() {
  rm -rf "$logs"
  if [ "$layer" != unit ] && [ "$layer" != mocks ] && [ "${NARWHAL_KEEP_SIM:-}" != 1 ]; then
    node -r ./tools/ts-require.js sim/cli.ts down >/dev/null || echo "scripts/test.sh: taking the simulated hosts down failed; run: npm run sim -- down" >&2
  fi
}
trap finish EXIT
status=0

# Two mocha runs side by side: the files named first write to a log of their own, printed once the
# rest are done, so neither output interleaves.
#   beside <log> <title> <files...> -- <mocha arguments for the rest>
beside() {
  local log=$1 title=$2; shift 2
  local own=() ignore=()
  while [ "$1" != -- ]; do own+=("$1"); ignore+=(--ignore "$1"); shift; done
  shift
  # --exit: a failed test can leave a poller or a login open; the lane still ends once its tests have.
  mocha --exit --reporter scripts/mocha-reporter.js "${own[@]}" >"$logs/$log-beside.log" 2>&1 &
  local side=$!
  mocha --exit --reporter scripts/mocha-reporter.js "$@" "${ignore[@]}" 2>&1 | tee "$logs/$log.log" || status=1
  wait "$side" || status=1
  printf '\n==> %s (run beside the ones above)\n\n' "$title"
  cat "$logs/$log-beside.log"
}

run_e2e() {
  beside e2e "e2e files on hosts of their own" "${OWN_HOSTS_E2E[@]}" -- 'test/e2e/**/*.test.ts'
}

# The CLI runs the program as JavaScript from a compile cache (tools/ts-require.js) without checking
# its types; tsc checks the whole tree once below instead, before any layer that drives the CLI. The
# full run lints it too (eslint.config.mjs), right after the type check.

case "$layer" in
  unit|mocks|providers)
    mocha --reporter scripts/mocha-reporter.js "test/$layer/**/*.test.ts" || status=1
    exit "$status" ;;
  e2e)
    tsc --noEmit -p .
    run_e2e ;;
  all)
    # The type check, the lint and the command provider's Go tests run beside the unit and mock layers,
    # which touch no simulated host and spend much of their time waiting on the processes they start;
    # each check's output is printed once the layers are done. The providers and e2e layers, which time
    # real engines, start only once every check has passed and run with the machine to themselves.
    checks=(tsc eslint go-test)
    tsc --noEmit -p . >"$logs/check-tsc.out" 2>&1 & pids=($!)
    eslint . >"$logs/check-eslint.out" 2>&1 & pids+=($!)
    (cd tools/command-provider && GOFLAGS=-mod=mod go test ./...) >"$logs/check-go-test.out" 2>&1 & pids+=($!)
    mocha --reporter scripts/mocha-reporter.js "test/unit/**/*.test.ts" "test/mocks/**/*.test.ts" 2>&1 | tee "$logs/layers.log" || status=1
    failed_checks=()
    for i in "${!checks[@]}"; do
      wait "${pids[$i]}" || failed_checks+=("${checks[$i]}")
      printf '\n==> %s\n' "${checks[$i]}"
      cat "$logs/check-${checks[$i]}.out"
    done
    if [ ${#failed_checks[@]} -gt 0 ]; then
      echo "scripts/test.sh: ${failed_checks[*]} failed (output above); the providers and e2e layers did not run" >&2
      exit 1
    fi
    beside providers "provider files on simulated hosts or Docker" "${SIM_HOSTS_PROVIDERS[@]}" -- "test/providers/**/*.test.ts"
    run_e2e ;;
esac

# Every mocha run ends with "N passed, N failed, N skipped": the sum is the suite's closing line, after
# the failed tests of every run, so the tail of CI's log names them.
cat "$logs"/*.log | grep '^FAILED ' || true
cat "$logs"/*.log | awk '/^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$/ { p += $1; f += $3; s += $5; n++ }
  END { if (n > 0) printf "\nall runs: %d passed, %d failed, %d skipped\n", p, f, s }'
exit "$status"

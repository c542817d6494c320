#!/usr/bin/env bash
# Runs a command with the project's own toolchain first on PATH:
#   <root>/.tools/bin     (pulumi CLI, language host and plugins built by scripts/setup.sh)
#   <root>/node_modules/.bin (ts-node, mocha, tsc)
# Usage: bash scripts/with-tools.sh <command> [args...]
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ "$#" -eq 0 ]; then
  echo "usage: scripts/with-tools.sh <command> [args...]" >&2
  exit 2
fi
export PATH="$root/.tools/bin:$root/node_modules/.bin:$PATH"
exec "$@"

#!/usr/bin/env bash
# Runs one command in the project's environment (scripts/env.sh): its own toolchain first on PATH.
# Usage: bash scripts/with-tools.sh <command> [args...]
set -euo pipefail
if [ "$#" -eq 0 ]; then
  echo "usage: scripts/with-tools.sh <command> [args...]" >&2
  exit 2
fi
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
exec "$@"

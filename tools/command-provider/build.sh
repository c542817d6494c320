#!/usr/bin/env bash
# Builds narwhal-fleet's pulumi-resource-command (tools/command-provider) into
# <root>/.tools/bin/pulumi-resource-command and installs it into the Pulumi
# plugin cache ($PULUMI_HOME, default <root>/.tools/pulumi-home) as the
# resource plugin "command" v1.2.1, the version @pulumi/command 1.2.1 asks for.
#
# Idempotent: the build is skipped when the binary is newer than every source
# file, and the install is skipped when the cached plugin is byte-identical.
#
# Usage: build.sh [OUTPUT_BINARY]   (default <root>/.tools/bin/pulumi-resource-command)
#
# Environment:
#   NARWHAL_TOOLS_DIR  tools dir (default <root>/.tools)
#   PULUMI_HOME        plugin cache home (default $NARWHAL_TOOLS_DIR/pulumi-home)
#   PULUMI             pulumi CLI (default $NARWHAL_TOOLS_DIR/bin/pulumi)
#   FORCE=1            rebuild and reinstall unconditionally
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
tools="${NARWHAL_TOOLS_DIR:-$root/.tools}"
version="1.2.1"
bin="${1:-$tools/bin/pulumi-resource-command}"
pulumi_cli="${PULUMI:-$tools/bin/pulumi}"

export PULUMI_HOME="${PULUMI_HOME:-$tools/pulumi-home}"
export PULUMI_SKIP_UPDATE_CHECK=true
export PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true

log() { echo "[command-provider] $*" >&2; }

mkdir -p "$(dirname "$bin")" "$PULUMI_HOME"

needs_build=1
if [[ -z "${FORCE:-}" && -x "$bin" ]]; then
  newer="$(find "$here" -maxdepth 1 -type f \( -name '*.go' -o -name 'go.mod' -o -name 'go.sum' -o -name 'build.sh' \) -newer "$bin" -print -quit)"
  [[ -z "$newer" ]] && needs_build=0
fi

if [[ "$needs_build" == 1 ]]; then
  command -v go >/dev/null || { log "go is not installed"; exit 1; }
  log "building $bin (v$version)"
  (
    cd "$here"
    GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0 \
      go build -trimpath -ldflags "-s -w -X main.version=$version" -o "$bin.tmp.$$" .
  )
  mv -f "$bin.tmp.$$" "$bin"
else
  log "$bin is up to date"
fi

plugin_dir="$PULUMI_HOME/plugins/resource-command-v$version"
if [[ -z "${FORCE:-}" && -f "$plugin_dir/pulumi-resource-command" ]] \
  && cmp -s "$bin" "$plugin_dir/pulumi-resource-command"; then
  log "plugin resource command v$version already installed in $PULUMI_HOME"
  exit 0
fi

if [[ ! -x "$pulumi_cli" ]]; then
  log "pulumi CLI not found at $pulumi_cli (set PULUMI=...)"
  exit 1
fi
log "installing resource plugin command v$version into $PULUMI_HOME"
"$pulumi_cli" plugin install resource command "$version" --file "$bin" --reinstall >&2
"$pulumi_cli" plugin ls 2>/dev/null | grep -E '^command[[:space:]]' >&2 || true

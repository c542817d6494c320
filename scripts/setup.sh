#!/usr/bin/env bash
# Installs everything narwhal-fleet needs on a Debian machine, from the npm registry, PyPI, the Go
# module proxy and Debian's packages only. Idempotent: each step checks before it acts, and builds are
# cached in .tools/ (ignored by git). Safe to run twice; the second run takes seconds.
set -euo pipefail
. "$(dirname "$0")/env.sh"
cd "$NARWHAL_ROOT"

PULUMI_VERSION=v3.274.1
# The Node.js language host moved out of the sdk/v3 module into a module of its own that the Go module
# proxy does not serve; sdk/v3 v3.68.0 is the last release that carries it as a package. The language
# host only spawns node on @pulumi/pulumi's own runner, so an older host drives the current SDK and CLI.
LANGUAGE_HOST_SDK_VERSION=v3.68.0
COMMAND_PROVIDER_VERSION=1.2.1
POLICY_HOST_VERSION=0.1.0
NARWHAL_VERSION=0.7.0
# SeaweedFS 4.53 (Apache-2.0), the object store the S3 evidence store and Pulumi's DIY S3 backend write to:
# an S3 API with conditional writes (If-None-Match: *), one `weed` binary. Its tags lack Go's v prefix, so
# the module proxy knows the release by this pseudo-version of its commit (`weed version` says 4.53).
SEAWEEDFS_VERSION=v0.0.0-20261109003541-7506e5f91cd6
# chromium: the evidence report is checked by rendering it headless (test/providers/report-render.test.ts).
# curl: scripts/object-store.sh probes the object store and signs its readiness write (--aws-sigv4).
DEBIAN_PACKAGES=(openssh-server openssh-client iperf3 iproute2 iptables docker.io prometheus procps psmisc chromium curl)

TOOLS="$NARWHAL_ROOT/.tools"
mkdir -p "$TOOLS/bin" "$PULUMI_HOME"
started=$SECONDS
step() { printf '\n==> %s\n' "$*"; }
done_() { printf '    %s\n' "$*"; }

# The Go builds (the CLI, the language host, the command provider, SeaweedFS) are most of a first setup's
# time and keep both cores busy; the downloads and installs below wait on the network and the disk, so they
# run meanwhile. The builds' output is printed once they end.
go_builds() {
  step "Pulumi CLI $PULUMI_VERSION"
  existing=$(command -v pulumi || true)
  if [ -n "$existing" ] && [ "$existing" != "$TOOLS/bin/pulumi" ] &&
     [ "$(printf '%s\n%s\n' "$PULUMI_VERSION" "$(pulumi version 2>/dev/null)" | sort -V | head -1)" = "$PULUMI_VERSION" ]; then
    ln -sfn "$existing" "$TOOLS/bin/pulumi"
    done_ "using $existing ($(pulumi version))"
  elif [ -x "$TOOLS/bin/pulumi" ] && [ "$("$TOOLS/bin/pulumi" version)" = "$PULUMI_VERSION" ]; then
    done_ "already built"
  else
    # pkg/v3 carries replace directives, so `go install pkg@version` refuses it; a wrapper module that
    # requires it as a tool builds it, because Go ignores a dependency's replace directives.
    mkdir -p "$TOOLS/go/cli"
    (cd "$TOOLS/go/cli" &&
      { [ -f go.mod ] || go mod init narwhal-fleet/tools/cli >/dev/null 2>&1; } &&
      GOFLAGS=-mod=mod go get -tool "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi@$PULUMI_VERSION" &&
      GOFLAGS=-mod=mod go build -tags osusergo -o "$TOOLS/bin/pulumi" \
        -ldflags "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$PULUMI_VERSION" \
        github.com/pulumi/pulumi/pkg/v3/cmd/pulumi)
    done_ "built $("$TOOLS/bin/pulumi" version)"
  fi

  step "Pulumi Node.js language host (sdk/v3 $LANGUAGE_HOST_SDK_VERSION)"
  if [ -x "$TOOLS/bin/pulumi-language-nodejs-$LANGUAGE_HOST_SDK_VERSION" ] && [ -f "$TOOLS/go/langhost/.built-$LANGUAGE_HOST_SDK_VERSION" ]; then
    done_ "already built"
  else
    mkdir -p "$TOOLS/go/langhost"
    (cd "$TOOLS/go/langhost" &&
      { [ -f go.mod ] || go mod init narwhal-fleet/tools/langhost >/dev/null 2>&1; } &&
      GOFLAGS=-mod=mod go get "github.com/pulumi/pulumi/sdk/v3@$LANGUAGE_HOST_SDK_VERSION" &&
      GOFLAGS=-mod=mod go build -o "$TOOLS/bin/pulumi-language-nodejs-$LANGUAGE_HOST_SDK_VERSION" \
        -ldflags "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$LANGUAGE_HOST_SDK_VERSION" \
        github.com/pulumi/pulumi/sdk/v3/nodejs/cmd/pulumi-language-nodejs &&
      touch ".built-$LANGUAGE_HOST_SDK_VERSION")
    done_ "built"
  fi
  # The CLI hands Pulumi.yaml's runtime options to the language host in its run request; this older host
  # reads them only as flags, so it would load ts-node for every project. The plugin the CLI starts (in
  # the project's folder) passes the project's `typescript` option as the flag, defaulting to true as
  # Pulumi does: this project's program.js loads compiled JavaScript and needs no ts-node.
  cat >"$TOOLS/bin/pulumi-language-nodejs.new" <<EOF
#!/bin/sh
typescript=true
grep -Eq '^[[:space:]]+typescript:[[:space:]]*false[[:space:]]*(#.*)?\$' Pulumi.yaml 2>/dev/null && typescript=false
exec "\$(dirname "\$0")/pulumi-language-nodejs-$LANGUAGE_HOST_SDK_VERSION" -typescript=\$typescript "\$@"
EOF
  chmod 755 "$TOOLS/bin/pulumi-language-nodejs.new" && mv "$TOOLS/bin/pulumi-language-nodejs.new" "$TOOLS/bin/pulumi-language-nodejs"

  step "Command provider $COMMAND_PROVIDER_VERSION (tools/command-provider)"
  # Built outside .tools/bin so the copy on PATH never shadows the one in the plugin cache.
  bash tools/command-provider/build.sh "$TOOLS/build/pulumi-resource-command"
  done_ "installed in the plugin cache"

  step "SeaweedFS $SEAWEEDFS_VERSION (the object store's weed)"
  if [ -x "$TOOLS/bin/weed" ] && [ -f "$TOOLS/go/seaweedfs/.built-$SEAWEEDFS_VERSION" ]; then
    done_ "already built"
  else
    # A wrapper module, as for the CLI. SeaweedFS's own go.mod replaces tyler-smith/go-bip39 (deleted from
    # GitHub; reached only through rclone) with its fork cosmos/go-bip39; Go ignores a dependency's replace
    # directives, so the wrapper repeats it.
    mkdir -p "$TOOLS/go/seaweedfs"
    (cd "$TOOLS/go/seaweedfs" &&
      { [ -f go.mod ] || go mod init narwhal-fleet/tools/seaweedfs >/dev/null 2>&1; } &&
      { grep -q '^replace github.com/tyler-smith/go-bip39 ' go.mod ||
        echo 'replace github.com/tyler-smith/go-bip39 => github.com/cosmos/go-bip39 v1.0.0' >>go.mod; } &&
      GOFLAGS=-mod=mod go get -tool "github.com/seaweedfs/seaweedfs/weed@$SEAWEEDFS_VERSION" &&
      GOFLAGS=-mod=mod go build -o "$TOOLS/bin/weed" github.com/seaweedfs/seaweedfs/weed &&
      rm -f .built-* && touch ".built-$SEAWEEDFS_VERSION")
    done_ "built $("$TOOLS/bin/weed" -logtostderr version 2>/dev/null | sed -n 1p)"
  fi
}
go_builds >"$TOOLS/go-builds.log" 2>&1 &
go_builds_pid=$!

step "Debian packages: ${DEBIAN_PACKAGES[*]}"
missing=()
for p in "${DEBIAN_PACKAGES[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
  done_ "installed ${missing[*]}"
else
  done_ "already installed"
fi

step "Docker Engine"
if docker info >/dev/null 2>&1; then
  done_ "a daemon answers"
else
  nohup dockerd >"$TOOLS/dockerd.log" 2>&1 &
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 0.5; done
  docker info >/dev/null 2>&1 || { echo "dockerd did not answer within 30 s; see $TOOLS/dockerd.log" >&2; exit 1; }
  done_ "started dockerd (log: .tools/dockerd.log)"
fi

step "npm packages (package-lock.json)"
# Judged by the lock file's content, not its age: a checkout or another worktree sharing these packages
# touches package-lock.json without changing it, and `npm ci` would empty the shared folder first. The
# provider shim is this project's own package, installed as a copy (.npmrc): its files count too.
lock_sha=$(cat package-lock.json dynamic-providers/shim-package/package.json dynamic-providers/shim-package/index.js | sha256sum | cut -d' ' -f1)
if [ ! -d node_modules ] || [ "$(cat node_modules/.narwhal-lock.sha256 2>/dev/null)" != "$lock_sha" ]; then
  npm ci --no-audit --no-fund
  echo "$lock_sha" >node_modules/.narwhal-lock.sha256
else
  done_ "node_modules is current"
fi

step "Dynamic provider host from @pulumi/pulumi"
# The engine looks for this plugin next to the CLI; without it dynamic resources fail. It is the SDK's own
# wrapper (pulumi-resource-pulumi-nodejs) less the Node start it spends on every run finding the host's
# script, which sits in the project's own node_modules when the CLI runs in the project's folder.
cat >"$TOOLS/bin/pulumi-resource-pulumi-nodejs.new" <<'EOF'
#!/bin/sh
script=node_modules/@pulumi/pulumi/cmd/dynamic-provider/index.js
[ -f "$script" ] || script=$(node -e "console.log(require.resolve('@pulumi/pulumi/cmd/dynamic-provider'))")
exec node "$script" "$@"
EOF
chmod 755 "$TOOLS/bin/pulumi-resource-pulumi-nodejs.new" && mv "$TOOLS/bin/pulumi-resource-pulumi-nodejs.new" "$TOOLS/bin/pulumi-resource-pulumi-nodejs"
done_ "installed next to the CLI"

step "Policy pack packages (policy/package-lock.json)"
# The pack (policy/) has its own packages, @pulumi/policy among them: the CLI runs it from its own folder.
policy_lock_sha=$(sha256sum policy/package-lock.json | cut -d' ' -f1)
if [ ! -d policy/node_modules ] || [ "$(cat policy/node_modules/.narwhal-lock.sha256 2>/dev/null)" != "$policy_lock_sha" ]; then
  (cd policy && npm ci --no-audit --no-fund)
  echo "$policy_lock_sha" >policy/node_modules/.narwhal-lock.sha256
else
  done_ "policy/node_modules is current"
fi

step "Python venv with narwhal-inference==$NARWHAL_VERSION"
if [ -x "$TOOLS/venv/bin/narwhal-serve" ] &&
   [ "$("$TOOLS/venv/bin/python" -c 'import importlib.metadata as m; print(m.version("narwhal-inference"))' 2>/dev/null)" = "$NARWHAL_VERSION" ]; then
  done_ "already installed"
else
  python3 -m venv "$TOOLS/venv"
  "$TOOLS/venv/bin/pip" install -q --disable-pip-version-check "narwhal-inference==$NARWHAL_VERSION"
  done_ "installed"
fi

step "Wheelhouse of narwhal-inference==$NARWHAL_VERSION for router hosts without a package index"
# The simulated hosts have no route to PyPI, as many GPU hosts don't: Gate B installs from these wheels.
wheels="$TOOLS/wheelhouse/narwhal-inference-$NARWHAL_VERSION"
if [ -f "$wheels/.complete" ]; then
  done_ "already downloaded"
else
  rm -rf "$wheels" && mkdir -p "$wheels"
  "$TOOLS/venv/bin/pip" download -q --disable-pip-version-check --dest "$wheels" "narwhal-inference==$NARWHAL_VERSION"
  touch "$wheels/.complete"
  done_ "downloaded to .tools/wheelhouse/"
fi

go_builds_ok=1
wait "$go_builds_pid" || go_builds_ok=0
cat "$TOOLS/go-builds.log"
[ "$go_builds_ok" = 1 ] || { echo "scripts/setup.sh: a Go build failed (its output is above, and in .tools/go-builds.log)" >&2; exit 1; }

step "Object store (SeaweedFS S3 on 127.0.0.1:${NARWHAL_OBJECT_STORE_PORT:-8333}, scripts/object-store.sh)"
# Started here so the S3 evidence store and a DIY S3 state backend find it; it outlives this script.
# `bash scripts/object-store.sh env` prints its credentials and endpoint.
# Nothing else here needs it (the tests start private stores), so a store that cannot start, e.g. because
# another checkout's holds its ports, is reported and setup goes on.
if object_store=$(bash scripts/object-store.sh start 2>&1); then
  done_ "$object_store"
else
  done_ "not started; the S3 evidence store and state backend need it (docs/team.md):"
  printf '%s\n' "$object_store" | sed 's/^/      /'
fi

step "Policy pack language host (tools/policy-language-host)"
# `--policy-pack policy` runs the pack through the language host PulumiPolicy.yaml names (nodejs-policy);
# the sdk v3.68.0 Node.js host cannot run plugins (docs/toolchain.md). A language plugin outside the CLI's
# own set is looked up only in the plugin cache.
host_src=tools/policy-language-host/pulumi-language-nodejs-policy
host_dir="$PULUMI_HOME/plugins/language-nodejs-policy-v$POLICY_HOST_VERSION"
if [ -f "$host_dir/pulumi-language-nodejs-policy" ] && cmp -s "$host_src" "$host_dir/pulumi-language-nodejs-policy"; then
  done_ "already installed"
else
  pulumi plugin install language nodejs-policy "$POLICY_HOST_VERSION" --file "$host_src" --reinstall >/dev/null
  done_ "installed in the plugin cache"
fi

step "Local state backend"
mkdir -p "$NARWHAL_ROOT/.state"
if ! pulumi stack ls --json 2>/dev/null | grep -q '"name": "dev"'; then
  pulumi stack init dev --non-interactive >/dev/null
  done_ "created stack dev in .state/"
else
  done_ "stack dev exists in .state/"
fi

printf '\nsetup finished in %ss\n' "$((SECONDS - started))"

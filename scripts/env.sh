# Environment for every command this project runs: its own Pulumi CLI, plugins, state and tools.
# Source it (`. scripts/env.sh`) to use `pulumi` by hand in this folder; the npm scripts do it for you.
NARWHAL_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")/.." && pwd)"
export NARWHAL_ROOT
export PATH="$NARWHAL_ROOT/.tools/bin:$NARWHAL_ROOT/.tools/venv/bin:$NARWHAL_ROOT/node_modules/.bin:$PATH"
# Plugins live with the project, not in the user's home, so two checkouts never share a plugin cache.
export PULUMI_HOME="$NARWHAL_ROOT/.tools/pulumi-home"
export PULUMI_SKIP_UPDATE_CHECK=true
export PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true
# Plugins come from the plugin cache or sit next to the CLI, never from PATH.
export PULUMI_IGNORE_AMBIENT_PLUGINS=true
# The state backend is a folder inside the project (ignored by git); any backend works for real stacks.
export PULUMI_BACKEND_URL="${PULUMI_BACKEND_URL:-file://$NARWHAL_ROOT/.state}"
# The dev stack deploys only onto the simulated fleet; its passphrase is not a secret (README).
if [ -z "${PULUMI_CONFIG_PASSPHRASE:-}" ] && [ -z "${PULUMI_CONFIG_PASSPHRASE_FILE:-}" ]; then
  export PULUMI_CONFIG_PASSPHRASE="narwhal-dev-simulated-fleet"
fi

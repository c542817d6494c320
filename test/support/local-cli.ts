/**
 * The environment a test's own small Pulumi project runs under with this project's CLI: its state in a
 * folder of the test's, the project's plugin cache, nothing fetched and no update check.
 */
import * as path from "node:path";

export const TOOLS = path.resolve(__dirname, "..", "..", ".tools");

export function localCliEnv(stateDir: string): Record<string, string> {
  return {
    PULUMI_BACKEND_URL: `file://${stateDir}`,
    PULUMI_CONFIG_PASSPHRASE: "test",
    PULUMI_SKIP_UPDATE_CHECK: "true",
    PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "true",
    PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK: "true",
    // Plugins from the plugin cache, as a user's would be, never a copy that happens to be on PATH.
    PULUMI_IGNORE_AMBIENT_PLUGINS: "true",
  };
}

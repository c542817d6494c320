import * as fs from "node:fs";
import * as path from "node:path";
import { isStackFolderName } from "../stack-name";

/**
 * The `narwhal-fleet:hosts` list of `Pulumi.<stack>.yaml` in the program directory, as it is now.
 *
 * A refresh configures the dynamic-provider host with the config of the last `up` and reads each resource
 * with its old inputs, so neither carries a host key pinned since. The stack file does: host keys are
 * public, never `--secret`, so they stand there in clear. Undefined when the file or the list is absent
 * (config from elsewhere, e.g. an ESC environment); logins then pin what their inputs say.
 */
export function currentHostsConfig(projectRoot: string, stack: string): unknown {
  if (!isStackFolderName(stack)) return undefined;
  const file = path.join(projectRoot, `Pulumi.${stack}.yaml`);
  let stat: fs.Stats;
  try {
    stat = fs.statSync(file);
  } catch {
    return undefined;
  }
  const key = `${file}:${stat.mtimeMs}:${stat.size}`;
  if (cached?.key !== key) {
    // js-yaml comes with @pulumi/pulumi, which reads the same files with it.
    const yaml = require("js-yaml") as { load(text: string): unknown };
    let hosts: unknown;
    try {
      const doc = yaml.load(fs.readFileSync(file, "utf8")) as { config?: Record<string, unknown> } | undefined;
      hosts = doc?.config?.["narwhal-fleet:hosts"];
    } catch {
      hosts = undefined; // the CLI has already parsed this file; a half-written one is read next call
    }
    cached = { key, hosts };
  }
  return cached.hosts;
}

let cached: { key: string; hosts: unknown } | undefined;

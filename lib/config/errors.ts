/** The one error the fleet config parser throws, with every problem it found. */

/** One problem: where (a rendered path such as `engines[2].gpuIds`) and what, in plain English. */
export interface ConfigIssue {
  readonly path: string;
  readonly message: string;
}

/** A path segment: an object key or an array index. */
export type PathSegment = string | number;

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/**
 * Renders `["engines", 2, "gpuIds"]` as `engines[2].gpuIds`. The first segment is the Pulumi config key
 * (`slo`, `hosts`, ...), so a path reads the way the stack file is written. Keys that are not plain
 * identifiers are quoted: `launch.engineEnv["MY VAR"]`.
 */
export function renderPath(segments: readonly PathSegment[]): string {
  let out = "";
  for (const segment of segments) {
    if (typeof segment === "number") out += `[${segment}]`;
    else if (IDENTIFIER.test(segment)) out += out ? `.${segment}` : segment;
    else out += `[${JSON.stringify(segment)}]`;
  }
  return out || "(config)";
}

/**
 * Thrown by `parseFleetConfig` with all problems at once (never only the first). Callers and tests
 * match on `code`, not `instanceof`: each serialized dynamic provider carries its own copy of lib/.
 */
export class FleetConfigError extends Error {
  /** Stable code, the same in every copy of this module. */
  readonly code = "NARWHAL_CONFIG_INVALID" as const;
  readonly issues: ReadonlyArray<ConfigIssue>;

  constructor(issues: ReadonlyArray<ConfigIssue>) {
    const count = `${issues.length} problem${issues.length === 1 ? "" : "s"}`;
    const clean = issues.map((i) => Object.freeze({ path: printable(i.path), message: printable(i.message) }));
    super(`invalid fleet config (${count}):\n${clean.map((i) => `  - ${i.path}: ${i.message}`).join("\n")}`);
    this.name = "FleetConfigError";
    this.issues = Object.freeze(clean);
  }
}

/**
 * The message is printed as is (the program ends with it): a control character that came in with a
 * config value or a path must not reach the terminal, where an escape sequence would be interpreted.
 */
function printable(text: string): string {
   
  return text.replace(/[\u0000-\u0009\u000b-\u001f\u007f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** JSON paths in error messages, written the way the value would be reached in TypeScript. */

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** Renders `["commands", 0, "argv", 2]` as `commands[0].argv[2]`; odd keys are quoted: `inputs["model dir"]`. */
export function renderJsonPath(segments: ReadonlyArray<PropertyKey>): string {
  let out = "";
  for (const segment of segments) {
    if (typeof segment === "number") out += `[${segment}]`;
    else if (IDENTIFIER.test(String(segment))) out += out ? `.${String(segment)}` : String(segment);
    else out += `[${JSON.stringify(String(segment))}]`;
  }
  return out || "(record)";
}

/**
 * A stack name that can name a folder, here (`runs/<stack>`) and on the hosts (`<stateDir>/<stack>`):
 * letters, digits, "_", "." or "-", and neither "." nor "..". Every path built from a stack name asks this.
 */
export function isStackFolderName(stack: unknown): stack is string {
  return typeof stack === "string" && /^[A-Za-z0-9_.-]+$/.test(stack) && stack !== "." && stack !== "..";
}

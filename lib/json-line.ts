/** The JSON object on the last line of a script's stdout (earlier lines are the script's own chatter). */
export function lastJsonLine<T>(stdout: string): T {
  return JSON.parse(stdout.trim().split("\n").pop() ?? "{}") as T;
}

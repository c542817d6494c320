/**
 * `node -r ./tools/ts-require.js scripts/router-request.ts <router URL>`: health, models and one completion through the
 * router (lib/router/smoke.ts), printed; exits 1 when any of them fails, 2 on bad arguments.
 */
import { routerSmoke } from "../lib/router/smoke";
import { parseFlagsAndWords, parseOrExit, UsageError } from "./args";

const USAGE = "usage: node -r ./tools/ts-require.js scripts/router-request.ts <router URL, e.g. http://198.18.0.11:8000>";

/** The router URL: one word, http or https. */
export function parseRouterRequestArgs(argv: readonly string[]): string {
  const { positionals } = parseFlagsAndWords(argv, {}, {});
  if (positionals.length !== 1) throw new UsageError(`expected one router URL, got ${positionals.length ? positionals.map((p) => JSON.stringify(p)).join(" ") : "none"}`);
  const url = positionals[0];
  if (!/^https?:\/\//.test(url)) throw new UsageError(`${JSON.stringify(url)} is not a router URL: expected http:// or https://`);
  return url;
}

async function main(): Promise<void> {
  const url = parseOrExit(() => parseRouterRequestArgs(process.argv.slice(2)), USAGE);
  try {
    const smoke = await routerSmoke(url);
    process.stdout.write(`health: ${JSON.stringify(smoke.health)}\nmodels: ${smoke.models.join(", ")}\ncompletion: ${JSON.stringify(smoke.completion)}\n`);
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n`);
    process.exit(1);
  }
}

if (require.main === module) void main();

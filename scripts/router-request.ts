/**
 * `node -r ./tools/ts-require.js scripts/router-request.ts <router URL>`: health, models and one completion through the
 * router (lib/router/smoke.ts), printed; exits 1 when any of them fails, 2 on bad arguments.
 */
import { routerSmoke } from "../lib/router/smoke";

async function main(): Promise<void> {
  const url = process.argv[2];
  if (!url || !/^https?:\/\//.test(url) || process.argv.length > 3) {
    process.stderr.write("usage: node -r ./tools/ts-require.js scripts/router-request.ts <router URL, e.g. http://198.18.0.11:8000>\n");
    process.exit(2);
  }
  try {
    const smoke = await routerSmoke(url);
    process.stdout.write(`health: ${JSON.stringify(smoke.health)}\nmodels: ${smoke.models.join(", ")}\ncompletion: ${JSON.stringify(smoke.completion)}\n`);
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n`);
    process.exit(1);
  }
}

void main();

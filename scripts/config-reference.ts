/**
 * `npm run docs:config [-- --check]`: writes docs/config.md from the config schema (lib/config/reference).
 * With `--check` it writes nothing and exits 1 when the page differs from what the schema gives, for a CI
 * step; the unit test test/unit/config/reference.test.ts checks the same. Exits 2 on bad arguments.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { parseArgs } from "node:util";
import { configReference } from "../lib/config/reference/page";

const USAGE = "usage: npm run docs:config [-- --check]";
const PAGE = path.join(__dirname, "..", "docs", "config.md");

function main(): number {
  let check: boolean;
  try {
    check = parseArgs({ args: process.argv.slice(2), options: { check: { type: "boolean", default: false } }, strict: true, allowPositionals: false }).values.check ?? false;
  } catch (e) {
    process.stderr.write(`${(e as Error).message.split("\n")[0]}\n${USAGE}\n`);
    return 2;
  }
  const page = configReference();
  const relative = path.relative(process.cwd(), PAGE);
  if (check) {
    const current = fs.existsSync(PAGE) ? fs.readFileSync(PAGE, "utf8") : "";
    if (current === page) return 0;
    process.stderr.write(`${relative} differs from the config schema: run \`npm run docs:config\` and commit the result\n`);
    return 1;
  }
  fs.writeFileSync(PAGE, page);
  process.stdout.write(`wrote ${relative}\n`);
  return 0;
}

process.exitCode = main();

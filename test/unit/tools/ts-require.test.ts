/**
 * tools/ts-require.js, the loader every CLI run, provider host and simulated engine uses: a `.ts` file is
 * compiled on its first load, later loads read JavaScript from the cache without loading TypeScript, and
 * an edited file is compiled again, so no stale program ever runs.
 */
import { expect } from "chai";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

const ROOT = path.resolve(__dirname, "..", "..", "..");
const LOADER = path.join(ROOT, "tools", "ts-require.js");
const CACHE = path.join(ROOT, ".build", "ts-cache");

/** Runs `file` in a fresh Node process through the loader; prints its output and whether TypeScript was loaded. */
function run(file: string): { out: string; compiled: boolean } {
  const probe = `require(${JSON.stringify(file)}); process.stdout.write("|" + Object.keys(require.cache).some((k) => /node_modules\\/typescript\\//.test(k)))`;
  const [out, loaded] = execFileSync(process.execPath, ["-r", LOADER, "-e", probe], { encoding: "utf8" }).split("|");
  return { out: out, compiled: loaded === "true" };
}

const cached = (): Set<string> => new Set(fs.existsSync(CACHE) ? fs.readdirSync(CACHE, { recursive: true }).map(String).filter((f) => f.endsWith(".js")) : []);

describe("tools/ts-require.js", () => {
  let dir: string;
  beforeEach(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), "ts-require-"))));
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("compiles a file once, then loads it from the cache without TypeScript", () => {
    const file = path.join(dir, "greet.ts");
    // A unique body: the cache is keyed by the file's text, so this test never meets an entry of another run.
    fs.writeFileSync(file, `const who: string = "fleet ${process.pid} ${Date.now()}";\nprocess.stdout.write(\`hello \${who}\`);\n`);
    const before = cached();
    const first = run(file);
    expect(first.out).to.match(/^hello fleet \d+ \d+$/);
    expect(first.compiled, "the first load compiles").to.equal(true);
    expect([...cached()].filter((f) => !before.has(f)), "one new cache entry").to.have.length(1);
    const second = run(file);
    expect(second.out).to.equal(first.out);
    expect(second.compiled, "the second load reads the cache").to.equal(false);
  });

  it("runs an edited file as edited, never a stale copy", () => {
    const file = path.join(dir, "value.ts");
    fs.writeFileSync(file, `export {};\nprocess.stdout.write(String(${Date.now()} as number));\n`);
    const old = run(file).out;
    // Same size, same second: only the text differs.
    fs.writeFileSync(file, fs.readFileSync(file, "utf8").replace(/\d(?=\s+as number)/, (d) => String((Number(d) + 1) % 10)));
    const edited = run(file);
    expect(edited.out).to.not.equal(old);
    expect(edited.out).to.equal(fs.readFileSync(file, "utf8").match(/String\((\d+)/)![1]);
    expect(edited.compiled, "an edit is compiled again").to.equal(true);
  });
});

"use strict";
/**
 * Loads the project's TypeScript as JavaScript compiled once. Requiring this file (`node -r
 * ./tools/ts-require.js`, the Pulumi entry `program.js`, the dynamic-provider shim) teaches `require` to
 * load `.ts` files from a cache: each file is transpiled on its first load (types stripped, no type
 * check: `npm test` runs tsc) and kept under `.build/ts-cache/` by the SHA-1 of its text, its path, the
 * compiler options, the TypeScript version and this loader. Every later CLI run, provider host and
 * simulated engine loads plain JavaScript without loading the compiler, and an edited file is compiled
 * again on its next load, so nothing stale is ever run and there is no build step to forget.
 *
 * Each compiled file carries an inline source map; `--enable-source-maps` (the tests set it) makes stack
 * traces name TypeScript lines. The CLI's runs leave it off: it slows every stack capture, and the Pulumi
 * SDK captures one per resource.
 */
const fs = require("node:fs");
const path = require("node:path");
const crypto = require("node:crypto");
const Module = require("node:module");

const ROOT = path.resolve(__dirname, "..");
const CACHE = path.join(ROOT, ".build", "ts-cache");
const TSCONFIG = path.join(ROOT, "tsconfig.json");

let salt; // what every compiled file depends on besides its own text
let compilerOptions; // parsed only when something has to be compiled
let ts;

function cacheSalt() {
  if (salt === undefined) {
    const version = JSON.parse(fs.readFileSync(require.resolve("typescript/package.json", { paths: [ROOT] }), "utf8")).version;
    // This file too: a change to how files are compiled here must not reuse what was compiled before it.
    salt = `${version}\0${fs.readFileSync(TSCONFIG, "utf8")}\0${fs.readFileSync(__filename, "utf8")}\0`;
  }
  return salt;
}

function compile(source, filename) {
  ts ??= require(require.resolve("typescript", { paths: [ROOT] }));
  if (!compilerOptions) {
    const { config } = ts.readConfigFile(TSCONFIG, ts.sys.readFile);
    compilerOptions = {
      ...ts.convertCompilerOptionsFromJson(config.compilerOptions, ROOT).options,
      module: ts.ModuleKind.CommonJS,
      sourceMap: false,
      inlineSourceMap: true,
      inlineSources: false,
      declaration: false,
      noEmit: false,
      // The JavaScript stands in for the .ts file itself: its source map names the file beside it, not a
      // path computed from the tsconfig's outDir.
      outDir: undefined,
      rootDir: undefined,
    };
  }
  return ts.transpileModule(source, { compilerOptions, fileName: filename }).outputText;
}

/** The JavaScript for one `.ts` file: from the cache, or compiled now and cached (write then rename). */
function javascriptFor(filename) {
  const source = fs.readFileSync(filename, "utf8");
  const key = crypto.createHash("sha1").update(cacheSalt()).update(path.relative(ROOT, filename)).update("\0").update(source).digest("hex");
  const cached = path.join(CACHE, key.slice(0, 2), `${key}.js`);
  try {
    return fs.readFileSync(cached, "utf8");
  } catch {
    const output = compile(source, filename);
    try {
      fs.mkdirSync(path.dirname(cached), { recursive: true });
      const tmp = `${cached}.${process.pid}.tmp`;
      fs.writeFileSync(tmp, output);
      fs.renameSync(tmp, cached);
    } catch {
      // A read-only checkout still runs: it compiles in memory on every load.
    }
    return output;
  }
}

/** Installs the `.ts` loader once per process (a second copy of this file finds the first). */
function register() {
  const marker = Symbol.for("narwhal-fleet.ts-require");
  if (process[marker]) return;
  process[marker] = true;
  Module._extensions[".ts"] = (module, filename) => module._compile(javascriptFor(filename), filename);
}

/** Requires a project module by its path from the project root (`dynamic-providers/x/provider.ts`). */
function load(relativePath) {
  register();
  return require(path.join(ROOT, relativePath));
}

register();
module.exports = { load, register, ROOT };

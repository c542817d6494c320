"use strict";
/**
 * `require("@pulumi/pulumi")` loads the SDK's closure serialiser, and with it the TypeScript compiler
 * (9 MB, through typescript-shim.js) and npm's arborist (with pacote, sigstore and tuf): two thirds of
 * the SDK's load time, about 0.4 CPU-s of every CLI run's program. The serialiser turns a function into
 * text. This program never needs that: each dynamic resource carries the provider text written out
 * (dynamic-providers/shim.ts PROVIDER_TEXT). So both modules are entered in require's cache as stand-ins
 * that load the real module on first use, which leaves anything that does serialise a function working.
 *
 * Required by program.js before anything loads the SDK. test/unit/tools/lazy-closure-deps.test.ts checks
 * that neither module loads with the program's modules and that serialising still works.
 */
const fs = require("node:fs");
const path = require("node:path");
const Module = require("node:module");

const SDK = path.dirname(require.resolve("@pulumi/pulumi/package.json", { paths: [path.resolve(__dirname, "..")] }));

/**
 * Puts a stand-in for `file` in require's cache. `esModule` is what the stand-in answers for `__esModule`
 * without loading anything: true where the SDK's caller wraps the module with `__importStar` (which would
 * otherwise copy every export at once), false where the caller reads it as it is.
 */
function onFirstUse(file, esModule) {
  if (!fs.existsSync(file) || require.cache[file]) return;
  let real;
  const load = () => {
    if (real === undefined) {
      delete require.cache[file];
      real = require(file);
    }
    return real;
  };
  const standIn = new Module(file, module);
  standIn.filename = file;
  standIn.loaded = true;
  standIn.exports = new Proxy(
    {},
    {
      get: (_, key) => (key === "__esModule" ? esModule : load()[key]),
      has: (_, key) => key in load(),
      ownKeys: () => Reflect.ownKeys(load()),
      getOwnPropertyDescriptor: (_, key) => {
        const d = Reflect.getOwnPropertyDescriptor(load(), key);
        // A proxy may not report a property non-configurable that its (empty) target lacks.
        return d && { ...d, configurable: true };
      },
    },
  );
  require.cache[file] = standIn;
}

// runtime/closure/parseFunction.js: `const ts = require("../../typescript-shim")`.
onFirstUse(path.join(SDK, "typescript-shim.js"), false);
// runtime/closure/codePaths.js: `const arborist = __importStar(require("@npmcli/arborist"))`.
try {
  onFirstUse(require.resolve("@npmcli/arborist", { paths: [SDK] }), true);
} catch {
  // An SDK without arborist loads nothing of it to defer.
}

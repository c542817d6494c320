import { expect } from "chai";
import { spawnSync } from "node:child_process";
import * as path from "node:path";

const ROOT = path.resolve(__dirname, "../../..");

/** Runs `body` in a fresh Node process that loaded the program's entry tools first, as program.js does; returns its JSON line. */
function inProgram(body: string): Record<string, unknown> {
  const script = `
    require(${JSON.stringify(path.join(ROOT, "tools/lazy-closure-deps.js"))});
    require(${JSON.stringify(path.join(ROOT, "tools/ts-require.js"))});
    // The SDK's TypeScript is still the stand-in (ts-require loads the compiler itself when its cache is cold);
    // arborist's own files come only with the real module (the stand-in sits at the package's entry file).
    const sdkDir = require("path").dirname(require.resolve("@pulumi/pulumi/package.json"));
    const sdkTypescript = () => !require("util").types.isProxy(require.cache[require("path").join(sdkDir, "typescript-shim.js")]?.exports);
    const loaded = (file) => Object.keys(require.cache).some((f) => f.endsWith("/node_modules/" + file));
    (async () => { ${body} })().then((r) => console.log(JSON.stringify(r)), (e) => { console.error(e); process.exit(1); });
  `;
  const r = spawnSync(process.execPath, ["-e", script], { cwd: ROOT, encoding: "utf8", timeout: 60_000 });
  expect(r.status, r.stderr).to.equal(0);
  return JSON.parse(r.stdout.trim().split("\n").pop()!);
}

describe("tools/lazy-closure-deps.js: the SDK's closure serialiser's dependencies load on first use", function () {
  this.timeout(90_000);

  it("the SDK and every dynamic resource module load without the TypeScript compiler or npm's arborist", () => {
    const r = inProgram(`
      const pulumi = require("@pulumi/pulumi");
      require(${JSON.stringify(path.join(ROOT, "dynamic-providers/declare.ts"))});
      for (const d of require("fs").readdirSync(${JSON.stringify(path.join(ROOT, "dynamic-providers"))})) {
        const m = ${JSON.stringify(path.join(ROOT, "dynamic-providers"))} + "/" + d + "/resource.ts";
        if (require("fs").existsSync(m)) require(m);
      }
      return { sdk: typeof pulumi.CustomResource, typescript: sdkTypescript(), arborist: loaded("@npmcli/arborist/lib/arborist/index.js") };
    `);
    expect(r).to.deep.equal({ sdk: "function", typescript: false, arborist: false });
  });

  it("serialising a function still works, loading them when it is asked for", () => {
    const r = inProgram(`
      const pulumi = require("@pulumi/pulumi");
      const captured = 41;
      const text = (await pulumi.runtime.serializeFunction(() => captured + 1)).text;
      const sdk = require("path").dirname(require.resolve("@pulumi/pulumi/package.json"));
      const arborist = require(require.resolve("@npmcli/arborist", { paths: [sdk] }));
      return { evaluates: eval(text + "; exports.handler()"), typescript: sdkTypescript(), arborist: typeof arborist.Arborist };
    `);
    expect(r).to.deep.equal({ evaluates: 42, typescript: true, arborist: "function" });
  });
});

/**
 * Components do no I/O: the program's entry (index.ts, entry/) reads stack config and local files once
 * and hands the components values, and hands them functions for the writes that can only happen once a
 * value resolves (the docker backend's known_hosts, entry/known-hosts.ts). This scan fails when a
 * component imports a module that reads or writes files, runs processes or opens connections, or one of
 * the project's modules that do.
 */
import { expect } from "chai";
import * as fs from "node:fs";
import * as path from "node:path";

const ROOT = path.resolve(__dirname, "../../..");
const COMPONENTS = path.join(ROOT, "components");

/** Node's and npm's modules that touch files, processes or the network. */
const IO_MODULES = /^(node:)?(fs|fs\/promises|child_process|net|tls|http|https|http2|dgram|dns|readline)$|^(ssh2|undici)$/;

/**
 * I/O a component may still do, each with the reason the entry cannot do it instead. None: even a write
 * that must happen inside an apply is a function the entry hands down.
 */
const ALLOWED: ReadonlyArray<{ file: string; module: string }> = [];

/** Every module a TypeScript source names: static and type-only imports, re-exports, `import()` and `require()`. */
export function importedModules(source: string): string[] {
  const found: string[] = [];
  for (const m of source.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|\brequire\s*\(\s*|^\s*import\s+)["']([^"']+)["']/gm)) found.push(m[1]);
  return found;
}

function sourcesUnder(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const full = path.join(dir, d.name);
    if (d.isDirectory()) return sourcesUnder(full);
    return d.name.endsWith(".ts") ? [full] : [];
  });
}

/** A relative import as the file it loads (`x.ts` or `x/index.ts`), or undefined for a package. */
function resolveLocal(from: string, spec: string): string | undefined {
  if (!spec.startsWith(".")) return undefined;
  const base = path.resolve(path.dirname(from), spec);
  return [`${base}.ts`, path.join(base, "index.ts")].find((f) => fs.existsSync(f));
}

/** Why a component's import is I/O, or undefined when it is not. */
function ioReason(file: string, spec: string): string | undefined {
  if (IO_MODULES.test(spec)) return `imports ${spec}`;
  const local = resolveLocal(file, spec);
  if (!local) return undefined;
  const rel = path.relative(ROOT, local);
  if (rel.startsWith(`entry${path.sep}`) || rel === "index.ts") return `imports the program's entry ${rel}`;
  // A project module that itself does I/O (lib's barrels only re-export, so they are not counted).
  const direct = importedModules(fs.readFileSync(local, "utf8")).find((m) => IO_MODULES.test(m));
  return direct && rel.startsWith(`lib${path.sep}`) ? `imports ${rel}, which imports ${direct}` : undefined;
}

describe("components do no I/O", () => {
  it("reads every kind of import a source can name", () => {
    const source = [
      `import * as fs from "node:fs";`,
      `import type { X } from "../lib/x";`,
      `export { y } from './y';`,
      `import "./side-effect";`,
      `const c = require("child_process");`,
      `const u = await import("undici");`,
    ].join("\n");
    expect(importedModules(source)).to.deep.equal(["node:fs", "../lib/x", "./y", "./side-effect", "child_process", "undici"]);
  });

  it("tells I/O imports from pure ones: node's and npm's I/O modules, the entry, and a lib module that does I/O", () => {
    const component = path.join(COMPONENTS, "runtime", "docker-host.ts");
    expect(ioReason(component, "node:fs")).to.equal("imports node:fs");
    expect(ioReason(component, "fs/promises")).to.equal("imports fs/promises");
    expect(ioReason(component, "ssh2")).to.equal("imports ssh2");
    expect(ioReason(component, "../../entry/known-hosts")).to.equal(`imports the program's entry ${path.join("entry", "known-hosts.ts")}`);
    expect(ioReason(component, "../../lib/ssh/client")).to.equal(`imports ${path.join("lib", "ssh", "client.ts")}, which imports ssh2`);
    for (const pure of ["node:path", "@pulumi/pulumi", "../../lib/shell", "./types"]) expect(ioReason(component, pure), pure).to.equal(undefined);
  });

  it("no component imports a module that reads files, runs processes or connects", () => {
    const files = sourcesUnder(COMPONENTS);
    expect(files.length, "components/ holds the components").to.be.greaterThan(10);
    const found = files.flatMap((file) =>
      importedModules(fs.readFileSync(file, "utf8")).flatMap((spec) => {
        const why = ioReason(file, spec);
        return why ? [{ file: path.relative(COMPONENTS, file).split(path.sep).join("/"), module: spec, why }] : [];
      }),
    );
    const allowed = (f: { file: string; module: string }) => ALLOWED.some((a) => a.file === f.file && a.module === f.module);
    expect(found.filter((f) => !allowed(f)).map((f) => `components/${f.file} ${f.why}`)).to.deep.equal([]);
    // An allowance no component needs any more is removed, not left to cover a new read.
    expect(ALLOWED.filter((a) => !found.some((f) => f.file === a.file && f.module === a.module))).to.deep.equal([]);
  });
});

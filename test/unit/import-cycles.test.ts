/**
 * The program's modules import one another without a cycle, type-only imports included: a module that
 * needs a neighbour's type and the neighbour that needs its values is one module's job split in two, and a
 * runtime cycle loads one of them half-built.
 */
import { expect } from "chai";
import * as fs from "node:fs";
import * as path from "node:path";
import * as ts from "typescript";

const ROOT = path.resolve(__dirname, "..", "..");
const PRODUCTION = ["index.ts", "entry", "components", "dynamic-providers", "lib"];

function tsFiles(rel: string): string[] {
  const full = path.join(ROOT, rel);
  if (fs.statSync(full).isFile()) return rel.endsWith(".ts") ? [rel] : [];
  return fs.readdirSync(full).flatMap((name) => tsFiles(path.join(rel, name)));
}

/** The module a relative specifier names, when it is one of `files`. */
function resolved(from: string, specifier: string, files: ReadonlySet<string>): string | undefined {
  const base = path.join(path.dirname(from), specifier);
  return [`${base}.ts`, path.join(base, "index.ts")].find((f) => files.has(f));
}

/** Every cycle the depth-first walk closes, as the modules around it. */
function cycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (file: string): void => {
    state.set(file, "open");
    stack.push(file);
    for (const next of graph.get(file) ?? []) {
      if (state.get(next) === "open") found.push([...stack.slice(stack.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(file, "done");
  };
  for (const file of [...graph.keys()].sort()) if (!state.has(file)) visit(file);
  return found;
}

describe("the program's import graph", () => {
  it("has no import cycle", () => {
    const files = new Set(PRODUCTION.flatMap(tsFiles));
    expect(files.size, "modules found").to.be.above(100);
    const graph = new Map<string, string[]>();
    for (const file of files) {
      const imports = ts.preProcessFile(fs.readFileSync(path.join(ROOT, file), "utf8"), true, false).importedFiles;
      graph.set(file, imports.flatMap((i) => (i.fileName.startsWith(".") ? [resolved(file, i.fileName, files)].filter((f): f is string => f !== undefined) : [])));
    }
    expect(cycles(graph).map((c) => c.join(" -> "))).to.deep.equal([]);
  });

  it("has no back arrow between provider folders", () => {
    const files = new Set(tsFiles("dynamic-providers"));
    const folderOf = (f: string) => f.split(path.sep)[1];
    const graph = new Map<string, string[]>();
    for (const file of files) {
      if (file.split(path.sep).length < 3) continue;
      const from = folderOf(file);
      const to = ts
        .preProcessFile(fs.readFileSync(path.join(ROOT, file), "utf8"), true, true)
        .importedFiles.flatMap((i) => (i.fileName.startsWith(".") ? [resolved(file, i.fileName, files)].filter((f): f is string => f !== undefined) : []))
        .filter((f) => f.split(path.sep).length >= 3 && folderOf(f) !== from)
        .map(folderOf);
      graph.set(from, [...new Set([...(graph.get(from) ?? []), ...to])]);
    }
    expect(cycles(graph).map((c) => c.join(" -> "))).to.deep.equal([]);
  });
});

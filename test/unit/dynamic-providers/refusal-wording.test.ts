/**
 * Every provider's refusals are in its own words, naming the property and what it must be, whatever is
 * wrong with a value. A field whose type check carries the words (`z.number({ error })`) but whose range or
 * pattern check does not (`.int().min(1)`) falls back to zod's ("Too small: expected number to be >=1")
 * for a value of the right type: each check chained on a worded type must carry words of its own.
 */
import { expect } from "chai";
import * as fs from "node:fs";
import * as path from "node:path";
import * as ts from "typescript";
import { z } from "zod";
import { schemaFailures } from "../../../lib/input-rules";
import { atLeast, got, matching, whole } from "../../../lib/provider-fields";

const ROOT = path.resolve(__dirname, "../../..");
function tsFiles(rel: string): string[] {
  const full = path.join(ROOT, rel);
  return fs.statSync(full).isFile() ? (rel.endsWith(".ts") ? [rel] : []) : fs.readdirSync(full).flatMap((n) => tsFiles(path.join(rel, n)));
}
const FILES = ["dynamic-providers", "lib/provider-fields.ts"].flatMap(tsFiles);
const CHECKS = new Set(["int", "min", "max", "positive", "nonnegative", "gt", "gte", "lt", "lte", "regex", "startsWith", "endsWith", "length", "nonempty", "finite", "multipleOf", "includes"]);

/** Whether a call's arguments hold an object with an `error` property (zod's words). */
const worded = (call: ts.CallExpression) => call.arguments.some((a) => ts.isObjectLiteralExpression(a) && a.properties.some((p) => p.name !== undefined && ts.isIdentifier(p.name) && p.name.text === "error"));

/** The `z.number(...)`, `z.string(...)` or `z.array(...)` call a chain of checks starts from, if any. */
function zodBase(e: ts.Expression): ts.CallExpression | undefined {
  while (ts.isCallExpression(e) && ts.isPropertyAccessExpression(e.expression)) {
    const target = e.expression.expression;
    if (ts.isIdentifier(target) && target.text === "z" && ["number", "string", "array"].includes(e.expression.name.text)) return e;
    e = target;
  }
  return undefined;
}

/** `file:line: .check(...)` for each check chained on a worded zod type without words of its own. */
function unworded(file: string, source: string): string[] {
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && CHECKS.has(node.expression.name.text) && !worded(node)) {
      const base = zodBase(node.expression.expression);
      if (base && worded(base)) found.push(`${file}:${sf.getLineAndCharacterOfPosition(node.getStart()).line + 1}: .${node.expression.name.text}(${node.arguments.map((a) => a.getText()).join(", ")})`);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

describe("provider schemas: every refusal in the provider's words", () => {
  it("no range or pattern check on a worded type falls back to zod's words", () => {
    expect(FILES.length).to.be.above(50);
    expect(FILES.flatMap((f) => unworded(f, fs.readFileSync(path.join(ROOT, f), "utf8")))).to.deep.equal([]);
  });

  it("finds such a check (the rule above can fail)", () => {
    expect(unworded("x.ts", 'const a = z.number({ error: got("n", "must be whole") }).int().min(1, { error: e });')).to.deep.equal(["x.ts:1: .int()"]);
  });

  it("the field helpers keep one wording for every way a value is wrong", () => {
    const schema = z.object({ n: whole(1, 100, got("n", "must be an integer from 1 to 100")), s: atLeast(0, got("s", "must not be negative")), u: matching(/^http:\/\//, got("u", "must be an http URL")) });
    for (const [value, words] of [
      [{ n: 0 }, "n must be an integer from 1 to 100, got 0"],
      [{ n: 1.5 }, "n must be an integer from 1 to 100, got 1.5"],
      [{ n: "x" }, 'n must be an integer from 1 to 100, got "x"'],
      [{ s: -1 }, "s must not be negative, got -1"],
      [{ u: "https://x" }, 'u must be an http URL, got "https://x"'],
    ] as const) {
      expect(schemaFailures(schema.partial(), value).map((f) => f.reason)).to.deep.equal([words]);
    }
  });
});

/**
 * The floor program compiled to JavaScript once, before any run: Pulumi then loads it as it loads any
 * Node program, with no TypeScript compiler in the process. This is the cheapest program of that many
 * resources the language host can run, so the fleet's ratios to it are what the program itself costs.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import * as ts from "typescript";
import { FLOOR_DIR } from "./floor-stack";

/** Beside the project's other build output (ignored by git); inside the project, so `@pulumi/pulumi` resolves. */
export const FLOOR_COMPILED_DIR = path.join(__dirname, "..", "..", ".build", "floor-compiled");

/** Writes the compiled floor and its project file; returns the folder to run the CLI in. */
export function compileFloor(): string {
  const source = fs.readFileSync(path.join(FLOOR_DIR, "index.ts"), "utf8");
  const { outputText, diagnostics } = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 }, reportDiagnostics: true });
  if (diagnostics?.length) throw new Error(`compiling bench/floor/index.ts failed: ${ts.flattenDiagnosticMessageText(diagnostics[0].messageText, "\n")}`);
  fs.mkdirSync(FLOOR_COMPILED_DIR, { recursive: true });
  fs.writeFileSync(path.join(FLOOR_COMPILED_DIR, "index.js"), outputText);
  // The same project name as bench/floor: both folders run the one floor stack and its state.
  const project = fs.readFileSync(path.join(FLOOR_DIR, "Pulumi.yaml"), "utf8").replace(/typescript: true/, "typescript: false").replace(/^main: index\.ts$/m, "main: index.js");
  fs.writeFileSync(path.join(FLOOR_COMPILED_DIR, "Pulumi.yaml"), project);
  return FLOOR_COMPILED_DIR;
}

/** The stack's config file follows it into the compiled folder (the CLI reads it from the folder it runs in). */
export function shareStackConfig(stackName: string): void {
  fs.copyFileSync(path.join(FLOOR_DIR, `Pulumi.${stackName}.yaml`), path.join(FLOOR_COMPILED_DIR, `Pulumi.${stackName}.yaml`));
}

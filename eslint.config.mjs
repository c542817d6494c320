// `npm run lint`: ESLint's and typescript-eslint's recommended rules, the latter with type information,
// and Pulumi's rules against an Output in a template literal (the string would hold a warning in place of
// the value; `pulumi.interpolate` is the fix). The plugin matches types by alias name, which an
// OutputInstance lacks; restrict-template-expressions (in the type-checked set) rejects every Output too.
// A rule switched off below says why on its line.
import js from "@eslint/js";
import pulumi from "@pulumi/eslint-plugin";
import globals from "globals";
import tseslint from "typescript-eslint";

export default tseslint.config(
  {
    // Built, installed or written at run time: not source.
    ignores: [".build/", ".tools/", "**/node_modules/", ".sim/", ".state/", "runs/"],
  },
  {
    // The floor program bench:cli compares every CLI run with: it stays byte for byte as it was measured.
    ignores: ["bench/floor/"],
  },
  js.configs.recommended,
  {
    files: ["**/*.js"],
    languageOptions: { sourceType: "commonjs", globals: globals.node },
  },
  {
    files: ["**/*.ts"],
    extends: [tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { "@pulumi": pulumi },
    rules: {
      "@pulumi/no-output-in-template-literal": "error",
      "@pulumi/no-output-instance-in-template-literal": "error",
      // A leading underscore names a binding kept on purpose: a positional argument, or a key left out of a rest copy.
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_", ignoreRestSiblings: true }],
      // Dynamic providers `require` their modules inside methods, so the serialised provider captures none (dynamic-providers/shim.ts); tests require plain-JavaScript modules and load some lazily.
      "@typescript-eslint/no-require-imports": "off",
      // Provider methods, mocks and handlers are async to meet a promise-returning interface and to turn a throw into a rejection, awaiting or not.
      "@typescript-eslint/require-await": "off",
      // Messages render values read from JSON with String() on purpose; after `??` their type is `{}`, which this rule takes for an object.
      "@typescript-eslint/no-base-to-string": "off",
      // Validators match control characters in order to refuse them.
      "no-control-regex": "off",
      // A refusal replaces what it caught with one clean message; a `cause` would print the original's frames beneath it.
      "preserve-caught-error": "off",
    },
  },
  {
    files: ["dynamic-providers/**/*.ts"],
    rules: {
      // Modules required inside methods, and engine replies before lib/ validates them, are `any` here by design.
      "@typescript-eslint/no-unsafe-argument": "off",
      "@typescript-eslint/no-unsafe-assignment": "off",
      "@typescript-eslint/no-unsafe-call": "off",
      "@typescript-eslint/no-unsafe-member-access": "off",
      "@typescript-eslint/no-unsafe-return": "off",
    },
  },
  {
    files: ["test/**/*.ts"],
    rules: {
      // Tests read replies, state and fixtures as parsed JSON (`any`) and assert on them: a wrong field fails the assertion.
      "@typescript-eslint/no-explicit-any": "off",
      "@typescript-eslint/no-unsafe-argument": "off",
      "@typescript-eslint/no-unsafe-assignment": "off",
      "@typescript-eslint/no-unsafe-call": "off",
      "@typescript-eslint/no-unsafe-member-access": "off",
      "@typescript-eslint/no-unsafe-return": "off",
      // chai asserts through property getters (`expect(x).to.be.empty`).
      "@typescript-eslint/no-unused-expressions": "off",
    },
  },
);

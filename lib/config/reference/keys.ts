/**
 * Every config key as a row of the reference: its path, type, default and description, read from the
 * zod schema through `z.toJSONSchema`, so the page says what the parser does. Three metadata keys
 * beside zod's `description` feed it: `expected` (the rule in words, set by the field builders in
 * ../fields.ts), `defaultText` (a default that depends on something else, such as the engine's index)
 * and `secret` (a credential, ../schema/credentials.ts).
 */
import { z } from "zod";

/** The part of a JSON Schema node the reference reads. */
export interface SchemaNode {
  type?: string;
  properties?: Record<string, SchemaNode>;
  required?: string[];
  items?: SchemaNode;
  default?: unknown;
  description?: string;
  expected?: string;
  defaultText?: string;
  secret?: boolean;
}

export interface KeyRow {
  /** `hosts[].port`, `runtime.deadlinesS.pull`. */
  readonly path: string;
  readonly type: string;
  /** A value in backticks, `required`, words from `defaultText`, or `–` when the key may stay unset. */
  readonly default: string;
  readonly description: string;
  readonly secret: boolean;
}

/** One top-level config key and the rows of everything under it. */
export interface KeySection {
  readonly key: string;
  /** `hosts[]` for a list, else the key. */
  readonly heading: string;
  readonly description: string;
  readonly required: boolean;
  readonly rows: readonly KeyRow[];
}

/** The schema as the user writes it (`io: "input"`: before defaults and transforms). */
export function jsonSchemaOf(schema: z.ZodType): SchemaNode {
  return z.toJSONSchema(schema, { io: "input" }) as SchemaNode;
}

/** A value as the page shows it: strings bare, lists with a space after each comma. */
function shown(value: unknown): string {
  const text = Array.isArray(value) ? `[${value.map((v) => JSON.stringify(v)).join(", ")}]` : typeof value === "string" ? value : JSON.stringify(value);
  return `\`${text}\``;
}

function typeOf(node: SchemaNode): string {
  if (node.expected) return node.expected;
  if (node.properties) return "an object";
  if (node.type === "array") return "a list";
  if (node.type === "boolean") return "true or false";
  return node.type ? `a ${node.type}` : "any value";
}

function defaultOf(node: SchemaNode, required: boolean): string {
  if (node.defaultText) return node.defaultText;
  // An object's own default is `{}`: its keys carry the defaults that matter.
  if (node.default !== undefined && !node.properties) return shown(node.default);
  return required ? "required" : "–";
}

/** Rows for every key under `node`, depth first, parents before their keys. */
export function keyRows(node: SchemaNode, prefix: string): KeyRow[] {
  const rows: KeyRow[] = [];
  for (const [name, child] of Object.entries(node.properties ?? {})) {
    const path = `${prefix}${name}`;
    const required = node.required?.includes(name) ?? false;
    rows.push({ path, type: typeOf(child), default: defaultOf(child, required), description: child.description ?? "", secret: child.secret === true });
    if (child.properties) rows.push(...keyRows(child, `${path}.`));
    else if (child.items?.properties) rows.push(...keyRows(child.items, `${path}[].`));
  }
  return rows;
}

/** The top-level keys of `schema`, each with the rows under it. */
export function keySections(schema: z.ZodType): KeySection[] {
  const root = jsonSchemaOf(schema);
  return Object.entries(root.properties ?? {}).map(([key, node]) => {
    const list = node.type === "array" && node.items?.properties !== undefined;
    return {
      key,
      heading: list ? `${key}[]` : key,
      description: node.description ?? "",
      required: root.required?.includes(key) ?? false,
      rows: list ? keyRows(node.items!, `${key}[].`) : keyRows(node, `${key}.`),
    };
  });
}

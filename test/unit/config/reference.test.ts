/**
 * docs/config.md is generated from the schema (lib/config/reference). These tests fail when the page
 * is stale, when a key has no description, and when the secrets the page marks are not the ones the
 * program refuses in clear text.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { expect } from "chai";
import { z } from "zod";
import { jsonSchemaOf, keyRows, keySections, type KeyRow } from "../../../lib/config/reference/keys";
import { configReference } from "../../../lib/config/reference/page";
import { CONFIG_KEYS, FleetConfigSchema } from "../../../lib/config/schema/fleet-config";
import { CredentialKeysSchema } from "../../../lib/config/schema/credentials";
import { engineSchema } from "../../../lib/config/schema/engines";
import { SECRET_CONFIG_KEYS } from "../../../lib/config/secrets";

const PAGE = path.join(__dirname, "..", "..", "..", "docs", "config.md");

const fleetRows = (): KeyRow[] => keySections(FleetConfigSchema).flatMap((s) => s.rows);
const credentialRows = (): KeyRow[] => keyRows(jsonSchemaOf(CredentialKeysSchema), "");

describe("config: reference page", () => {
  it("docs/config.md is what the schema generates", () => {
    const generated = configReference().split("\n");
    const written = fs.readFileSync(PAGE, "utf8").split("\n");
    const line = generated.findIndex((text, i) => text !== written[i]);
    const at = line === -1 && written.length !== generated.length ? Math.min(written.length, generated.length) : line;
    if (at !== -1) {
      expect.fail(
        `docs/config.md differs from the config schema at line ${at + 1}; run \`npm run docs:config\` and commit the result\n` +
          `  written:   ${written[at] ?? "(end of file)"}\n  generated: ${generated[at] ?? "(end of file)"}`,
      );
    }
  });

  it("covers every config key the parser reads, and every key read apart from it", () => {
    expect(keySections(FleetConfigSchema).map((s) => s.key)).to.deep.equal([...CONFIG_KEYS]);
    const page = configReference();
    for (const row of [...fleetRows(), ...credentialRows()]) expect(page, row.path).to.include(`| \`${row.path}\` |`);
  });

  it("gives every key and every section a description", () => {
    const undescribed = [...fleetRows(), ...credentialRows()].filter((r) => r.description.trim() === "").map((r) => r.path);
    expect(undescribed).to.deep.equal([]);
    expect(keySections(FleetConfigSchema).filter((s) => s.description.trim() === "").map((s) => s.key)).to.deep.equal([]);
    expect(jsonSchemaOf(CredentialKeysSchema).description).to.be.a("string").and.not.equal("");
  });

  it("describes an engine after the first the same way (its defaults differ, its words do not)", () => {
    const second = keyRows(jsonSchemaOf(engineSchema(1)), "engines[].");
    expect(second).to.deep.equal(keySections(FleetConfigSchema).find((s) => s.key === "engines")!.rows);
  });

  it("marks exactly the credentials the program refuses in clear text as secret", () => {
    expect(credentialRows().filter((r) => r.secret).map((r) => r.path)).to.have.members([...SECRET_CONFIG_KEYS]);
    expect(fleetRows().filter((r) => r.secret)).to.deep.equal([]);
    const page = configReference();
    for (const key of SECRET_CONFIG_KEYS) expect(page).to.match(new RegExp(`^\\| \`${key}\` \\| [^\\n]*\\| \\*\\*Secret\\.\\*\\* `, "m"), key);
  });

  it("keeps credentials apart from the plain keys", () => {
    // entry/stack-config.ts reads exactly these apart from the parse.
    expect(Object.keys(CredentialKeysSchema.shape)).to.have.members([...SECRET_CONFIG_KEYS, "sshPrivateKeyFile"]);
    const plain = Object.keys(FleetConfigSchema.shape);
    expect(Object.keys(CredentialKeysSchema.shape).filter((k) => plain.includes(k))).to.deep.equal([]);
  });
});

describe("config: reference rows", () => {
  const schema = z.strictObject({
    port: z.number().meta({ expected: "an integer from 1 to 65535" }).default(22).describe("SSH port."),
    name: z.string().describe("A name."),
    lens: z.array(z.number()).default(() => [1, 2]).describe("Lengths."),
    role: z.enum(["a", "b"]).default("a").meta({ description: "Pool.", defaultText: "`a` for the first, `b` for the rest" }),
    key: z.string().optional().meta({ description: "A key.", secret: true }),
    inner: z
      .strictObject({ on: z.boolean().default(true).describe("Switch."), bare: z.number() })
      .optional()
      .describe("Nested."),
  });

  it("reads path, type, default, description and secrecy from the schema", () => {
    expect(keyRows(jsonSchemaOf(schema), "x.")).to.deep.equal([
      { path: "x.port", type: "an integer from 1 to 65535", default: "`22`", description: "SSH port.", secret: false },
      { path: "x.name", type: "a string", default: "required", description: "A name.", secret: false },
      { path: "x.lens", type: "a list", default: "`[1, 2]`", description: "Lengths.", secret: false },
      { path: "x.role", type: "a string", default: "`a` for the first, `b` for the rest", description: "Pool.", secret: false },
      { path: "x.key", type: "a string", default: "–", description: "A key.", secret: true },
      { path: "x.inner", type: "an object", default: "–", description: "Nested.", secret: false },
      { path: "x.inner.on", type: "true or false", default: "`true`", description: "Switch.", secret: false },
      // A key added without a description is a row with none: the test above names it.
      { path: "x.inner.bare", type: "a number", default: "required", description: "", secret: false },
    ]);
  });
});

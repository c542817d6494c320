import { expect } from "chai";
import * as fs from "node:fs";
import { inspect } from "node:util";
import { EvidenceStore } from "../../../lib/evidence/store";
import { SecretRegistry } from "../../../lib/evidence/secrets";
import { filesUnder, rejectionOf, sampleRecord, tempDirs } from "./helpers";

const API_KEY = "nw-live-7f3a9c2e51b84d06a1e2";
const PASSWORD = 'pa"ss\\w0rd:with/odd+chars';
const b64 = (s: string) => Buffer.from(s).toString("base64");
const b64url = (s: string) => Buffer.from(s).toString("base64url");
const TAIL = "; nothing was written. Pass secrets to the engine through its environment or a file, and record only their digest";

/** Every form of a secret a test looks for on disk. */
const forms = (secret: string) => [secret, b64(secret), b64url(secret), encodeURIComponent(secret), JSON.stringify(secret).slice(1, -1)];

describe("evidence store: secrets never reach the disk", () => {
  const dirs = tempDirs();

  const refusals: Array<[string, () => ReturnType<typeof sampleRecord>, string]> = [
    ["a nested string", () => sampleRecord({ observations: { env: ["HOME=/root", `VLLM_API_KEY=${API_KEY}`] } }), "observations.env[1] contains a registered secret (plain)"],
    ["an argv element", () => sampleRecord({ commands: [{ ...sampleRecord().commands[0], argv: ["vllm", "--api-key", API_KEY] }] }), "commands[0].argv[2] contains a registered secret (plain)"],
    ["an input", () => sampleRecord({ inputs: { "api key": API_KEY } }), 'inputs["api key"] contains a registered secret (plain)'],
    ["a key", () => sampleRecord({ observations: { headers: { [API_KEY]: true } } }), "a key of observations.headers contains a registered secret (plain)"],
    ["its base64", () => sampleRecord({ observations: { blob: b64(API_KEY) } }), "observations.blob contains a registered secret (base64)"],
    ["its base64url", () => sampleRecord({ observations: { blob: b64url(API_KEY) } }), "observations.blob contains a registered secret (base64url)"],
    ["a URL-encoded password", () => sampleRecord({ observations: { url: `http://u:${encodeURIComponent(PASSWORD)}@h/` } }), "observations.url contains a registered secret (URL-encoded)"],
    ["JSON text holding it", () => sampleRecord({ observations: { raw: JSON.stringify({ password: PASSWORD }) } }), "observations.raw contains a registered secret (JSON-escaped)"],
    ["the verdict", () => sampleRecord({ verdict: { status: "fail", reasons: [`engine refused key ${API_KEY}`] } }), "verdict.reasons[0] contains a registered secret (plain)"],
  ];
  for (const [where, record, message] of refusals) {
    it(`refuses a secret in ${where}, naming the JSON path but not the value`, async () => {
      const store = new EvidenceStore(dirs.root(), { secrets: [API_KEY, PASSWORD] });
      const error = await rejectionOf(store.write(record()));
      expect(error.code).to.equal("NARWHAL_EVIDENCE_SECRET");
      expect(error.message).to.equal(`evidence record "discovery" for host sim1 refused: ${message}${TAIL}`);
      const everything = inspect(error, { depth: 10 }) + JSON.stringify(error) + String(error.stack);
      for (const form of [...forms(API_KEY), ...forms(PASSWORD)]) expect(everything).not.to.include(form);
      expect(fs.existsSync(dirs.tmp() + "/runs")).to.equal(false);
    });
  }

  it("finds base64 of a secret inside longer base64 at every byte alignment (Basic auth, encoded files)", async () => {
    const store = new EvidenceStore(dirs.root(), { secrets: [API_KEY] });
    for (const user of ["a", "ab", "abc"]) {
      const error = await rejectionOf(store.write(sampleRecord({ observations: { header: `Basic ${b64(`${user}:${API_KEY}`)}` } })));
      expect(error.message, user).to.equal(`evidence record "discovery" for host sim1 refused: observations.header contains a registered secret (base64)${TAIL}`);
    }
  });

  it("finds a numeric secret stored as a JSON number", async () => {
    const store = new EvidenceStore(dirs.root(), { secrets: ["48291375"] });
    const error = await rejectionOf(store.write(sampleRecord({ observations: { pin: 48291375 } })));
    expect(error.message).to.equal(`evidence record "discovery" for host sim1 refused: observations.pin contains a registered secret (plain)${TAIL}`);
  });

  it("does not name the record by a subject that holds the secret", async () => {
    const store = new EvidenceStore(dirs.root(), { secrets: ["hunter22"] });
    const error = await rejectionOf(store.write(sampleRecord({ subject: { kind: "host", alias: "hunter22" } })));
    expect(error.message).to.equal(`evidence record refused: subject.alias contains a registered secret (plain)${TAIL}`);
  });

  it("refuses secrets registered after construction", async () => {
    const store = new EvidenceStore(dirs.root());
    const record = sampleRecord({ observations: { token: API_KEY } });
    store.addSecrets(API_KEY);
    expect((await rejectionOf(store.write(record))).code).to.equal("NARWHAL_EVIDENCE_SECRET");
  });

  it("ignores unset secrets instead of refusing everything", async () => {
    const store = new EvidenceStore(dirs.root(), { secrets: ["", undefined] });
    store.addSecrets("");
    expect((await store.write(sampleRecord())).relativePath).to.match(/^discovery\//);
  });

  it("refuses an artifact holding a secret, by byte offset, and one whose name holds it", async () => {
    const store = new EvidenceStore(dirs.root(), { secrets: [API_KEY] });
    const env = `VLLM_PORT=8000\nVLLM_API_KEY=${API_KEY}\n`;
    const error = await rejectionOf(store.writeArtifact("generation", "engine.env", env));
    expect(error.code).to.equal("NARWHAL_EVIDENCE_SECRET");
    expect(error.message).to.equal(`generation artifact "engine.env" refused: a registered secret (plain) starts at byte 28; nothing was written`);
    const named = await rejectionOf(store.writeArtifact("generation", `key-${API_KEY}.txt`, "x"));
    expect(named.message).to.equal("generation artifact refused: its name contains a registered secret; nothing was written");
    const encoded = await rejectionOf(store.writeArtifact("generation", "auth.b64", Buffer.from(b64(`user:${API_KEY}`))));
    expect(encoded.message).to.match(/^generation artifact "auth\.b64" refused: a registered secret \(base64\) starts at byte \d+; nothing was written$/);
  });

  it("leaves no form of any secret anywhere under the store after refused and accepted writes", async () => {
    const store = new EvidenceStore(dirs.root(), { secrets: [API_KEY, PASSWORD] });
    await store.write(sampleRecord()); // the folders exist, so a leak would have somewhere to land
    for (const [, record] of refusals) await rejectionOf(store.write(record()));
    await rejectionOf(store.writeArtifact("generation", "engine.env", `VLLM_API_KEY=${API_KEY}`));
    await store.writeArtifact("generation", "engine.env", "VLLM_API_KEY_SHA256=sha256:…");
    const files = filesUnder(dirs.tmp());
    expect(files).to.have.lengthOf(2); // the accepted record and artifact, and no temporary file
    for (const { file, bytes } of files) {
      for (const form of [...forms(API_KEY), ...forms(PASSWORD)]) expect(bytes.includes(form), `${file} holds ${form.length} chars`).to.equal(false);
    }
  });
});

describe("evidence: the secret registry", () => {
  it("does not search inside base64 for fragments too short to be told from chance", () => {
    const registry = new SecretRegistry(["k9"]);
    const random = Buffer.from(Array.from({ length: 3000 }, (_, i) => (i * 7919) % 251)).toString("base64");
    // "rO" is what base64 of "k9" looks like at one byte alignment inside longer base64: chance, not a leak.
    expect(random.includes(b64("k9"))).to.equal(false);
    expect(random.includes("rO")).to.equal(true);
    expect(registry.findInBytes(Buffer.from(random))).to.equal(undefined);
    expect(registry.findInValue({ a: b64("k9") })).to.deep.equal({ path: "a", inKey: false, encoding: "base64" });
  });

  it("redacts every form of a secret from text", () => {
    const registry = new SecretRegistry([API_KEY]);
    expect(registry.findInValue(registry.redact(`k=${API_KEY} b=${b64(API_KEY)} u=${b64url("x:" + API_KEY)}`, "R"))).to.equal(undefined);
    expect(registry.redact(`k=${API_KEY}`, "R")).to.equal("k=R");
  });
});

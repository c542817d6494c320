/** narwhal's canonical_digest, byte for byte, including floats as Python writes them. */
import { expect } from "chai";
import { canonicalDigest, JsonNumberText, parseJsonKeepingNumbers, pythonCompactJson } from "../../../lib/attestation/canonical";
import { narwhal } from "./fixtures";

const PY = `
import json, sys
from pathlib import Path
from narwhal.contracts import canonical_digest
value = json.loads(Path(sys.argv[1], "v.json").read_text())
print(json.dumps({"text": json.dumps(value, sort_keys=True, separators=(",", ":")), "digest": canonical_digest(value)}))
`;

describe("canonical digest", () => {
  it("equals Python's for keys and strings outside ASCII, control characters and nesting", () => {
    const value = { "é": "naïve ☃ 𝄞", z: [1, true, null, { b: "\u0001\u007f\n\"\\/" }], "\u{1F600}": 0, "\uFF01": -7, a: {} };
    const seen = JSON.parse(narwhal(PY, { "v.json": JSON.stringify(value) }));
    expect(pythonCompactJson(value)).to.equal(seen.text);
    expect(canonicalDigest(value)).to.equal(seen.digest);
  });

  it("keeps the digits Python wrote for floats", () => {
    const text = '{"engine":{"process_start_time_seconds":1754000000.0,"version":"0.29.0"},"n":[1.5e-07,2]}';
    const parsed = parseJsonKeepingNumbers(text) as { engine: { process_start_time_seconds: JsonNumberText } };
    expect(parsed.engine.process_start_time_seconds).to.be.instanceOf(JsonNumberText);
    expect(Number(parsed.engine.process_start_time_seconds)).to.equal(1754000000);
    const seen = JSON.parse(narwhal(PY, { "v.json": text }));
    expect(pythonCompactJson(parsed)).to.equal(seen.text);
    expect(canonicalDigest(parsed)).to.equal(seen.digest);
    expect(() => canonicalDigest({ t: 1754000000.5 })).to.throw("is not a safe integer");
  });

  it("refuses text that is not JSON, saying where", () => {
    expect(() => parseJsonKeepingNumbers('{"a": 1,}')).to.throw("not JSON: an object key at offset 8");
    expect(() => parseJsonKeepingNumbers("[1] x")).to.throw("not JSON: text after the value at offset 4");
    expect(parseJsonKeepingNumbers('{"__proto__": {"x": 1}}')).to.have.own.property("__proto__");
  });
});

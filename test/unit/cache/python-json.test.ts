import { expect } from "chai";
import { pythonJsonDumps } from "../../../lib/cache/python-json";

/** Expected texts were printed by CPython 3's json.dumps(value, sort_keys=True). */
describe("pythonJsonDumps", () => {
  it("writes Python's default separators and sorts keys at every level", () => {
    expect(pythonJsonDumps({ b: [1, true, null, { z: "\x7f\n\t\"\\", a: {} }], a: [] })).to.equal('{"a": [], "b": [1, true, null, {"a": {}, "z": "\\u007f\\n\\t\\"\\\\"}]}');
  });

  it("escapes everything outside printable ASCII, astral characters as surrogate pairs", () => {
    expect(pythonJsonDumps("AMD Instinct™ MI300X — 192 GB 😀")).to.equal('"AMD Instinct\\u2122 MI300X \\u2014 192 GB \\ud83d\\ude00"');
  });

  it("refuses numbers Python would print differently, and values JSON has no form for", () => {
    expect(() => pythonJsonDumps(1.5)).to.throw(TypeError, "pythonJsonDumps: 1.5 is not a safe integer; Python would print it differently");
    expect(() => pythonJsonDumps(undefined)).to.throw(TypeError, "pythonJsonDumps: a undefined has no JSON form");
  });
});

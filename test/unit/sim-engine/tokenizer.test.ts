import { expect } from "chai";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { StartupError } from "../../../sim/engine/errors";
import { Generator } from "../../../sim/engine/generation";
import { Tokenizer } from "../../../sim/engine/tokenizer";
import { makeModel, removeTemps, tempDir } from "./helpers";

describe("sim-engine tokenizer and generation", () => {
  after(removeTemps);

  it("splits words and punctuation deterministically and adds BOS", () => {
    const t = new Tokenizer(makeModel(), 32000, false);
    expect(t.pieces("The sea, is calm. ")).to.deep.equal(["The", " sea", ",", " is", " calm", ".", " "]);
    const ids = t.encode("The sea, is calm.", true);
    expect(ids[0]).to.equal(1);
    expect(ids).to.have.length(7);
    expect(t.encode("The sea, is calm.", true)).to.deep.equal(ids);
    expect(t.encode("The sea, is calm.", false)).to.deep.equal(ids.slice(1));
    expect(ids.slice(1).every((id) => id > 2 && id < 32000)).to.equal(true);
  });

  it("refuses a directory without tokenizer files, and custom tokenizer code without trust", () => {
    expect(() => new Tokenizer(join(tempDir(), "empty"), 32000, false)).to.throw(StartupError, "Can't load tokenizer");
    const custom = makeModel();
    writeFileSync(join(custom, "tokenizer_config.json"), JSON.stringify({ auto_map: { AutoTokenizer: ["tok.T", null] } }));
    expect(() => new Tokenizer(custom, 32000, false)).to.throw(StartupError, "contains custom code");
    expect(new Tokenizer(custom, 32000, true).bosId).to.equal(1);
  });

  it("generates the same tokens for the same prompt at temperature 0", () => {
    const t = new Tokenizer(makeModel(), 32000, false);
    const greedy = { temperature: 0, seed: null, ignoreEos: false, minTokens: 0 };
    const a = new Generator(t, [1, 5, 9], greedy, 1);
    const b = new Generator(t, [1, 5, 9], greedy, 2);
    const first = Array.from({ length: 20 }, (_, i) => a.tokenAt(i)?.text);
    expect(Array.from({ length: 20 }, (_, i) => b.tokenAt(i)?.text)).to.deep.equal(first);
    expect(first.every((x) => typeof x === "string" && x.startsWith(" "))).to.equal(true);
  });

  it("ends with EOS after the natural length unless ignore_eos, never before min_tokens", () => {
    const t = new Tokenizer(makeModel(), 32000, false);
    const g = new Generator(t, [1, 5, 9], { temperature: 0, seed: null, ignoreEos: false, minTokens: 0 }, 0);
    let eos = 0;
    while (g.tokenAt(eos) !== null) eos++;
    expect(eos).to.be.within(64, 512);
    expect(new Generator(t, [1, 5, 9], { temperature: 0, seed: null, ignoreEos: true, minTokens: 0 }, 0).tokenAt(eos)).to.not.equal(null);
    expect(new Generator(t, [1, 5, 9], { temperature: 0, seed: null, ignoreEos: false, minTokens: eos + 5 }, 0).tokenAt(eos + 4)).to.not.equal(null);
  });
});

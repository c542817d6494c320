/**
 * Deterministic "model output": what a temperature-0 model would say is a pure function of the prompt,
 * so the same prompt gives the same tokens on every engine (and a decode leg on D continues exactly as
 * the prefill leg on P began). Sampling with temperature > 0 mixes in a seed (or a random one).
 *
 * Each prompt has a natural length between 64 and 512 tokens after which the model emits EOS
 * (finish_reason "stop") unless ignore_eos is set; min_tokens suppresses EOS before that many tokens.
 * Requests for up to 64 tokens therefore always end with finish_reason "length".
 */
import { fnv1a, type Tokenizer } from "./tokenizer";

const WORDS = (
  "the sea is calm and deep under a grey sky where waves roll over stones near the shore while gulls " +
  "call above boats that drift toward harbour lights in the evening wind carrying salt spray across " +
  "old piers of wood and rope"
).split(" ");

export interface Token {
  id: number;
  text: string;
}

export interface SamplingOptions {
  temperature: number;
  seed: number | null;
  ignoreEos: boolean;
  minTokens: number;
}

export class Generator {
  private readonly key: number;
  private readonly naturalLength: number;

  constructor(
    private readonly tokenizer: Tokenizer,
    promptIds: readonly number[],
    private readonly sampling: SamplingOptions,
    salt: number,
  ) {
    let h = 0x811c9dc5;
    for (const id of promptIds) h = fnv1a(String(id), h);
    this.naturalLength = 64 + (h % 449);
    if (sampling.temperature > 0) h = fnv1a(String(sampling.seed ?? salt), h);
    this.key = h;
  }

  /** The token at 0-based output position i, or null for EOS. */
  tokenAt(i: number): Token | null {
    if (!this.sampling.ignoreEos && i >= this.naturalLength && i >= this.sampling.minTokens) return null;
    const word = WORDS[fnv1a(String(i), this.key) % WORDS.length];
    const text = ` ${word}`;
    return { id: this.tokenizer.idOf(text), text };
  }
}

/**
 * Trial prompts as token ids: the router sizes an int-list prompt by its length (no tokenizer round trip),
 * so a request asks for exactly the prompt length its workload class names. Ids are drawn from
 * [100, vocabSize), clear of the low ids tokenizers keep for special tokens; `vocabSize` should be the
 * count of ordinary tokens (a tokenizer's added special tokens usually sit at the top).
 *
 * Prefix caching must not make a trial look faster than its workload: the first two ids spell the request's
 * index, so no two requests of a run share a first block, and the rest are seeded by the run's salt (its
 * request-id prefix) and the index, so different runs differ too while a run replays exactly.
 */
import { hash32, mix32, mulberry32 } from "./random";

/** The lowest id a prompt uses. */
export const PROMPT_ID_FLOOR = 100;

/** Exactly `n` token ids for request `index` of the run named by `salt`. */
export function promptIds(n: number, vocabSize: number, salt: string, index: number): number[] {
  if (!(Number.isInteger(n) && n >= 1)) throw new Error(`prompt length is ${n}; it must be a whole number of at least 1.`);
  if (!(Number.isInteger(vocabSize) && vocabSize > PROMPT_ID_FLOOR + 1)) {
    throw new Error(`vocabSize is ${vocabSize}; it must be a whole number above ${PROMPT_ID_FLOOR + 1} (the model's count of ordinary tokens).`);
  }
  const span = vocabSize - PROMPT_ID_FLOOR;
  const ids = new Array<number>(n);
  ids[0] = PROMPT_ID_FLOOR + (index % span);
  if (n > 1) ids[1] = PROMPT_ID_FLOOR + (Math.floor(index / span) % span);
  const next = mulberry32(mix32(hash32(salt), index));
  for (let i = 2; i < n; i++) ids[i] = PROMPT_ID_FLOOR + Math.floor(next() * span);
  return ids;
}

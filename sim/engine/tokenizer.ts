/**
 * A deterministic stand-in for the model's tokenizer.
 *
 * Text is split GPT-style (a word with its leading whitespace, or one punctuation mark with its leading
 * whitespace), and each piece maps to an id by hashing, so the same text always gives the same ids and
 * count. Special tokens come from the model's tokenizer files, like HF tokenizers: `bos_token`,
 * `eos_token` and `add_bos_token` from tokenizer_config.json, their ids from tokenizer.json's
 * `added_tokens`. A directory with neither file fails startup the way vLLM does.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { StartupError } from "./errors";
import { trustRemoteCodeError } from "./model";

const PIECE = /\s*[\p{L}\p{N}_]+|\s*[^\s\p{L}\p{N}_]|\s+/gu;

/** 32-bit FNV-1a over UTF-16 code units: small, stable, good enough to spread ids. */
export function fnv1a(text: string, seed = 0x811c9dc5): number {
  let h = seed >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

export interface ChatMessage {
  role: string;
  content: string | Array<{ type?: string; text?: string }> | null;
}

type Json = Record<string, unknown>;

function readJsonIfExists(file: string): Json | null {
  if (!existsSync(file)) return null;
  try {
    const v: unknown = JSON.parse(readFileSync(file, "utf8"));
    return v && typeof v === "object" ? (v as Json) : null;
  } catch {
    throw new StartupError("OSError", `Unable to load tokenizer file ${file}: not valid JSON`);
  }
}

function tokenName(v: unknown): string | null {
  if (typeof v === "string") return v;
  if (v && typeof v === "object" && typeof (v as Json).content === "string") return (v as Json).content as string;
  return null;
}

export class Tokenizer {
  readonly bosId: number;
  readonly eosId: number;
  readonly bosToken: string;
  readonly eosToken: string;
  private readonly addBos: boolean;
  private readonly special: Set<number>;

  constructor(
    readonly dir: string,
    readonly vocabSize: number,
    trustRemoteCode: boolean,
  ) {
    const tokJson = readJsonIfExists(join(dir, "tokenizer.json"));
    const tokConfig = readJsonIfExists(join(dir, "tokenizer_config.json"));
    if (!tokJson && !tokConfig) {
      throw new StartupError(
        "OSError",
        `Can't load tokenizer for '${dir}'. If you were trying to load it from 'https://huggingface.co/models', ` +
          `make sure you don't have a local directory with the same name. Otherwise, make sure '${dir}' is the ` +
          "correct path to a directory containing all relevant files for a LlamaTokenizerFast tokenizer.",
      );
    }
    // A tokenizer class shipped as code needs the same consent as a custom model class.
    if (tokConfig?.auto_map !== undefined && !trustRemoteCode) throw trustRemoteCodeError(dir);
    const added = new Map<string, number>();
    for (const t of Array.isArray(tokJson?.added_tokens) ? (tokJson.added_tokens as Json[]) : []) {
      if (typeof t.content === "string" && typeof t.id === "number") added.set(t.content, t.id);
    }
    this.bosToken = tokenName(tokConfig?.bos_token) ?? "<s>";
    this.eosToken = tokenName(tokConfig?.eos_token) ?? "</s>";
    this.bosId = added.get(this.bosToken) ?? 1;
    this.eosId = added.get(this.eosToken) ?? 2;
    this.addBos = tokConfig?.add_bos_token !== false;
    this.special = new Set([0, this.bosId, this.eosId, ...added.values()]);
  }

  /** Splits text into the pieces that become tokens. */
  pieces(text: string): string[] {
    return text.match(PIECE) ?? [];
  }

  /** The id of one piece: a hash into the vocabulary that never lands on a special token. */
  idOf(piece: string): number {
    let id = fnv1a(piece) % this.vocabSize;
    while (this.special.has(id)) id = (id + 1) % this.vocabSize;
    return id;
  }

  encode(text: string, addSpecialTokens: boolean): number[] {
    const ids = this.pieces(text).map((p) => this.idOf(p));
    return addSpecialTokens && this.addBos ? [this.bosId, ...ids] : ids;
  }

  /** The strings for /tokenize's return_token_strs (special tokens by name). */
  tokenStrings(text: string, addSpecialTokens: boolean): string[] {
    const pieces = this.pieces(text);
    return addSpecialTokens && this.addBos ? [this.bosToken, ...pieces] : pieces;
  }

  /** A fixed chat template (ChatML-like); the simulator does not run Jinja templates. */
  applyChatTemplate(messages: readonly ChatMessage[], addGenerationPrompt: boolean): string {
    const text = (c: ChatMessage["content"]) =>
      typeof c === "string" ? c : Array.isArray(c) ? c.map((p) => p.text ?? "").join("") : "";
    const body = messages.map((m) => `<|im_start|>${m.role}\n${text(m.content)}<|im_end|>\n`).join("");
    return addGenerationPrompt ? `${body}<|im_start|>assistant\n` : body;
  }
}

/**
 * OpenAI-compatible request validation and response shapes, as vLLM's serving layer produces them:
 * error bodies, model cards, completion and chat responses and their streaming chunks.
 */
import { randomBytes } from "node:crypto";
import { z } from "zod";

/** An HTTP error with vLLM's body: {"error": {"message", "type", "param", "code"}}. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
    readonly param: string | null = null,
  ) {
    super(message);
  }

  body(): { error: { message: string; type: string; param: string | null; code: number } } {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.status } };
  }
}

export const badRequest = (message: string, param: string | null = null): ApiError => new ApiError(400, "BadRequestError", message, param);

export const randomId = (prefix: string): string => `${prefix}-${randomBytes(16).toString("hex")}`;

const StreamOptions = z.looseObject({
  // vLLM's StreamOptions defaults include_usage to true, so `"stream_options": {}` turns usage on.
  include_usage: z.boolean().nullish().transform((v) => v ?? true),
  continuous_usage_stats: z.boolean().nullish().transform((v) => v ?? false),
});

const Common = {
  model: z.string().nullish(),
  max_tokens: z.number().int().nullish(),
  temperature: z.number().min(0).nullish(),
  seed: z.number().int().nullish(),
  n: z.number().int().min(1).nullish(),
  stream: z.boolean().nullish(),
  stream_options: StreamOptions.nullish(),
  ignore_eos: z.boolean().nullish(),
  min_tokens: z.number().int().min(0).nullish(),
  request_id: z.string().nullish(),
  kv_transfer_params: z.record(z.string(), z.unknown()).nullish(),
  // vLLM's extension: each choice (and each streamed chunk) carries the ids of the tokens it produced.
  return_token_ids: z.boolean().nullish(),
};

export const CompletionRequestSchema = z.looseObject({
  ...Common,
  prompt: z.union([
    z.string(),
    z.array(z.string()).min(1),
    z.array(z.number().int().nonnegative()).min(1),
    z.array(z.array(z.number().int().nonnegative()).min(1)).min(1),
  ]),
  add_special_tokens: z.boolean().nullish(),
});
export type CompletionRequest = z.output<typeof CompletionRequestSchema>;

const ChatMessageSchema = z.looseObject({
  role: z.string(),
  content: z.union([z.string(), z.array(z.looseObject({ type: z.string().optional(), text: z.string().optional() })), z.null()]).optional(),
});

export const ChatRequestSchema = z.looseObject({
  ...Common,
  messages: z.array(ChatMessageSchema).min(1),
  max_completion_tokens: z.number().int().nullish(),
  add_generation_prompt: z.boolean().nullish(),
  add_special_tokens: z.boolean().nullish(),
});
export type ChatRequest = z.output<typeof ChatRequestSchema>;

/** POST /tokenize takes either a prompt or chat messages. */
export const TokenizeRequestSchema = z
  .looseObject({
    model: z.string().nullish(),
    prompt: z.string().optional(),
    messages: z.array(ChatMessageSchema).optional(),
    add_generation_prompt: z.boolean().nullish(),
    add_special_tokens: z.boolean().nullish(),
    return_token_strs: z.boolean().nullish(),
  })
  .refine((b) => (b.prompt === undefined) !== (b.messages === undefined), "Either `prompt` or `messages` must be given (not both).");

/** Parses a JSON body against a schema; failures are 400s like FastAPI's validation errors in vLLM. */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  const r = schema.safeParse(body);
  if (!r.success) throw badRequest(z.prettifyError(r.error));
  return r.data;
}

/** The common request checks vLLM's serving layer makes before scheduling. */
export function checkSampling(req: { stream?: boolean | null; stream_options?: unknown; max_tokens?: number | null; min_tokens?: number | null }): void {
  if (req.stream_options && req.stream !== true) throw badRequest("Stream options can only be defined when `stream=True`.", "stream_options");
  if (req.max_tokens !== null && req.max_tokens !== undefined && req.max_tokens < 1) {
    throw badRequest(`max_tokens must be at least 1, got ${req.max_tokens}.`, "max_tokens");
  }
  if (req.min_tokens && req.max_tokens && req.min_tokens > req.max_tokens) {
    throw badRequest(`min_tokens must be less than or equal to max_tokens=${req.max_tokens}, got ${req.min_tokens}.`, "min_tokens");
  }
}

/** Resolves max_tokens against the context window, with vLLM's errors for prompts that do not fit. */
export function resolveMaxTokens(promptTokens: number, requested: number | null | undefined, maxModelLen: number): number {
  if (promptTokens > maxModelLen || (promptTokens === maxModelLen && requested == null)) {
    throw badRequest(
      `This model's maximum context length is ${maxModelLen} tokens. However, your request has ${promptTokens} input tokens. ` +
        "Please reduce the length of the input messages.",
      "input_tokens",
    );
  }
  const maxTokens = requested ?? maxModelLen - promptTokens;
  if (promptTokens + maxTokens > maxModelLen) {
    throw badRequest(
      `'max_tokens' or 'max_completion_tokens' is too large: ${maxTokens}. This model's maximum context length is ${maxModelLen} ` +
        `tokens and your request has ${promptTokens} input tokens (${maxTokens} > ${maxModelLen} - ${promptTokens}).`,
      "max_tokens",
    );
  }
  return maxTokens;
}

export function modelCard(id: string, root: string, maxModelLen: number, created: number): Record<string, unknown> {
  return {
    id,
    object: "model",
    created,
    owned_by: "vllm",
    root,
    parent: null,
    max_model_len: maxModelLen,
    permission: [
      {
        id: randomId("modelperm"),
        object: "model_permission",
        created,
        allow_create_engine: false,
        allow_sampling: true,
        allow_logprobs: true,
        allow_search_indices: false,
        allow_view: true,
        allow_fine_tuning: false,
        organization: "*",
        group: null,
        is_blocking: false,
      },
    ],
  };
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export const usage = (prompt: number, completion: number): Usage => ({
  prompt_tokens: prompt,
  completion_tokens: completion,
  total_tokens: prompt + completion,
});

/** One SSE event. */
export const sse = (data: unknown): string => `data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`;

export interface TokenIds {
  produced: number[];
  prompt: number[];
}

/** How one API (completions or chat) renders choices and chunks. */
export interface Format {
  idPrefix: string;
  object: string;
  chunkObject: string;
  /** `ids`: the produced and prompt token ids when the request asked for `return_token_ids`, else null. */
  choice(index: number, text: string, finish: string, kv: unknown, ids?: TokenIds | null): Record<string, unknown>;
  chunkChoice(index: number, text: string, finish: string | null, ids?: number[] | null): Record<string, unknown>;
  /** The chat API opens each choice's stream with a role-only delta. */
  openingChoice?(index: number): Record<string, unknown>;
}

export const COMPLETION: Format = {
  idPrefix: "cmpl",
  object: "text_completion",
  chunkObject: "text_completion",
  choice: (index, text, finish, kv, ids) => ({
    index,
    text,
    logprobs: null,
    finish_reason: finish,
    stop_reason: null,
    token_ids: ids?.produced ?? null,
    prompt_logprobs: null,
    prompt_token_ids: ids?.prompt ?? null,
    ...(kv ? { kv_transfer_params: kv } : {}),
  }),
  chunkChoice: (index, text, finish, ids) => ({ index, text, logprobs: null, finish_reason: finish, stop_reason: null, ...(ids ? { token_ids: ids } : {}) }),
};

export const CHAT: Format = {
  idPrefix: "chatcmpl",
  object: "chat.completion",
  chunkObject: "chat.completion.chunk",
  choice: (index, text, finish, kv) => ({
    index,
    message: { role: "assistant", content: text, refusal: null, annotations: null, audio: null, function_call: null, tool_calls: [], reasoning_content: null },
    logprobs: null,
    finish_reason: finish,
    stop_reason: null,
    ...(kv ? { kv_transfer_params: kv } : {}),
  }),
  chunkChoice: (index, text, finish, ids) => ({ index, delta: { content: text }, logprobs: null, finish_reason: finish, stop_reason: null, ...(ids ? { token_ids: ids } : {}) }),
  openingChoice: (index) => ({ index, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null }),
};

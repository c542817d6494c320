/**
 * The HTTP front end (node:http), shaped like vLLM's OpenAI-compatible API server: exactly vLLM 0.29's
 * routes (anything else is FastAPI's 404 `{"detail":"Not Found"}`), API-key guard, JSON and SSE
 * responses. Engine work is delegated to engine.ts; what only tests need is on the control port
 * (control.ts).
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { EngineDeadError, type Engine, type Job, type JobResult } from "./engine";
import type { SamplingOptions, Token } from "./generation";
import { closeServer, listenOn, sendJson } from "./http";
import { KvLoadError } from "./nixl";
import {
  ApiError,
  badRequest,
  CHAT,
  ChatRequestSchema,
  checkSampling,
  COMPLETION,
  CompletionRequestSchema,
  type Format,
  modelCard,
  parseBody,
  randomId,
  resolveMaxTokens,
  sse,
  TokenizeRequestSchema,
  usage,
} from "./openai";
import { AbortedError } from "./scheduler";
import type { ChatMessage } from "./tokenizer";

type Handler = (req: IncomingMessage, res: ServerResponse, body: unknown) => Promise<void> | void;

const MAX_BODY_BYTES = 64 * 2 ** 20;

function sendEmpty(res: ServerResponse, status: number): void {
  res.writeHead(status, { "content-length": 0 });
  res.end();
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new ApiError(413, "BadRequestError", "Request body too large");
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** vLLM 0.29's AuthenticationMiddleware guards only these path prefixes (#58144). */
function guarded(path: string): boolean {
  return path.startsWith("/v1") || path.startsWith("/v2") || path.startsWith("/inference");
}

function bearerMatches(header: string | undefined, keyHash: Buffer): boolean {
  if (!header) return false;
  const space = header.indexOf(" ");
  if (space < 0 || header.slice(0, space).toLowerCase() !== "bearer") return false;
  return timingSafeEqual(createHash("sha256").update(header.slice(space + 1)).digest(), keyHash);
}

function errorResponse(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof EngineDeadError) return new ApiError(500, "InternalServerError", err.message);
  if (err instanceof KvLoadError) {
    // kv_load_failure_policy=fail finishes the request with FinishReason.ERROR; vLLM's serving layer
    // turns that into a 500. The detail is kept in the message so a client can tell failures apart.
    return new ApiError(500, "InternalServerError", `Internal server error: KV load failed (${err.failureType}): ${err.message}`);
  }
  return new ApiError(500, "InternalServerError", (err as Error)?.message ?? String(err));
}

interface Plan {
  prompts: number[][];
  maxTokens: number[];
  n: number;
  sampling: SamplingOptions;
  stream: boolean;
  includeUsage: boolean;
  continuousUsage: boolean;
  kvTransferParams: Record<string, unknown> | null;
  requestId: string;
  returnTokenIds: boolean;
}

export class EngineServer {
  readonly http: Server;
  private readonly routes = new Map<string, Handler>();
  private readonly keyHash: Buffer | null;
  private readonly created = Math.floor(Date.now() / 1000);

  constructor(private readonly engine: Engine) {
    const key = engine.parts.args.apiKey;
    this.keyHash = key ? createHash("sha256").update(key).digest() : null;
    const r = (method: string, path: string, h: Handler) => this.routes.set(`${method} ${path}`, h);
    r("GET", "/health", (_q, res) => sendEmpty(res, this.engine.dead ? 503 : 200));
    r("GET", "/ping", (_q, res) => sendEmpty(res, this.engine.dead ? 503 : 200));
    r("GET", "/version", (_q, res) => sendJson(res, 200, { version: this.engine.parts.sim.version }));
    r("GET", "/load", (_q, res) => sendJson(res, 200, { server_load: this.engine.parts.args.enableServerLoadTracking ? this.engine.serverLoad : 0 }));
    r("GET", "/v1/models", (_q, res) => this.models(res));
    r("GET", "/metrics", (_q, res) => {
      const text = this.engine.parts.metrics.render();
      res.writeHead(200, { "content-type": "text/plain; version=0.0.4; charset=utf-8", "content-length": Buffer.byteLength(text) });
      res.end(text);
    });
    r("POST", "/tokenize", (_q, res, body) => this.tokenize(res, body));
    r("POST", "/v1/completions", (_q, res, body) => this.completions(res, body));
    r("POST", "/v1/chat/completions", (_q, res, body) => this.chat(res, body));
    this.http = createServer((req, res) => void this.dispatch(req, res));
    this.http.keepAliveTimeout = 5000;
  }

  private async dispatch(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? "/", "http://engine").pathname;
    const method = req.method ?? "GET";
    try {
      if (this.keyHash && method !== "OPTIONS" && guarded(path) && !bearerMatches(req.headers.authorization, this.keyHash)) {
        return sendJson(res, 401, { error: "Unauthorized" });
      }
      const handler = this.routes.get(`${method} ${path}`);
      if (!handler) {
        const known = [...this.routes.keys()].some((k) => k.endsWith(` ${path}`));
        return sendJson(res, known ? 405 : 404, { detail: known ? "Method Not Allowed" : "Not Found" });
      }
      let body: unknown = undefined;
      if (method === "POST") {
        const text = await readBody(req);
        try {
          body = text === "" ? {} : JSON.parse(text);
        } catch (err) {
          throw badRequest(`JSON decode error: ${(err as Error).message}`);
        }
      }
      await handler(req, res, body);
    } catch (err) {
      if (err instanceof AbortedError) return;
      const api = errorResponse(err);
      if (!res.headersSent) sendJson(res, api.status, api.body());
      else res.end();
    }
  }

  private checkModel(model: string | null | undefined): string {
    const names = this.engine.parts.servedModelNames;
    if (model && !names.includes(model)) throw new ApiError(404, "NotFoundError", `The model \`${model}\` does not exist.`, "model");
    return names[0];
  }

  private models(res: ServerResponse): void {
    const { servedModelNames, model, geometry } = this.engine.parts;
    sendJson(res, 200, { object: "list", data: servedModelNames.map((id) => modelCard(id, model.path, geometry.maxModelLen, this.created)) });
  }

  private tokenize(res: ServerResponse, raw: unknown): void {
    if (!this.engine.parts.sim.tokenizeRoute) return sendJson(res, 404, { detail: "Not Found" });
    const body = parseBody(TokenizeRequestSchema, raw);
    this.checkModel(body.model);
    const { tokenizer, geometry } = this.engine.parts;
    let text: string;
    let addSpecial: boolean;
    if (body.messages) {
      text = tokenizer.applyChatTemplate(body.messages as ChatMessage[], body.add_generation_prompt ?? true);
      addSpecial = body.add_special_tokens ?? false;
    } else {
      text = body.prompt ?? "";
      addSpecial = body.add_special_tokens ?? true;
    }
    const tokens = tokenizer.encode(text, addSpecial);
    sendJson(res, 200, {
      count: tokens.length,
      max_model_len: geometry.maxModelLen,
      tokens,
      token_strs: body.return_token_strs ? tokenizer.tokenStrings(text, addSpecial) : null,
    });
  }

  /** Shared by both generation APIs: sampling, limits and usage options. */
  private plan(
    body: {
      max_tokens?: number | null;
      temperature?: number | null;
      seed?: number | null;
      n?: number | null;
      stream?: boolean | null;
      stream_options?: { include_usage: boolean; continuous_usage_stats: boolean } | null;
      ignore_eos?: boolean | null;
      min_tokens?: number | null;
      request_id?: string | null;
      kv_transfer_params?: Record<string, unknown> | null;
      return_token_ids?: boolean | null;
    },
    prompts: number[][],
    format: Format,
  ): Plan {
    checkSampling(body);
    const { geometry, tokenizer, args } = this.engine.parts;
    for (const ids of prompts) {
      const bad = ids.find((id) => id >= tokenizer.vocabSize);
      if (bad !== undefined) throw badRequest(`Token id ${bad} is out of vocabulary`, "prompt");
    }
    const stream = body.stream === true;
    const includeUsage = stream && ((body.stream_options?.include_usage ?? false) || args.enableForceIncludeUsage);
    return {
      prompts,
      maxTokens: prompts.map((ids) => resolveMaxTokens(ids.length, body.max_tokens, geometry.maxModelLen)),
      n: body.n ?? 1,
      sampling: {
        temperature: body.temperature ?? 1.0,
        seed: body.seed ?? args.seed,
        ignoreEos: body.ignore_eos ?? false,
        minTokens: body.min_tokens ?? 0,
      },
      stream,
      includeUsage,
      continuousUsage: includeUsage && (body.stream_options?.continuous_usage_stats ?? false),
      kvTransferParams: body.kv_transfer_params ?? null,
      requestId: body.request_id ? `${format.idPrefix}-${body.request_id}` : randomId(format.idPrefix),
      returnTokenIds: body.return_token_ids === true,
    };
  }

  private async completions(res: ServerResponse, raw: unknown): Promise<void> {
    const body = parseBody(CompletionRequestSchema, raw);
    const modelName = this.checkModel(body.model);
    const { tokenizer } = this.engine.parts;
    const addSpecial = body.add_special_tokens ?? true;
    const p = body.prompt;
    const prompts: number[][] =
      typeof p === "string"
        ? [tokenizer.encode(p, addSpecial)]
        : typeof p[0] === "string"
          ? (p as string[]).map((s) => tokenizer.encode(s, addSpecial))
          : typeof p[0] === "number"
            ? [p as number[]]
            : (p as number[][]);
    await this.generate(res, this.plan(body, prompts, COMPLETION), modelName, COMPLETION);
  }

  private async chat(res: ServerResponse, raw: unknown): Promise<void> {
    const body = parseBody(ChatRequestSchema, raw);
    const modelName = this.checkModel(body.model);
    const { tokenizer } = this.engine.parts;
    const text = tokenizer.applyChatTemplate(body.messages as ChatMessage[], body.add_generation_prompt ?? true);
    const prompt = tokenizer.encode(text, body.add_special_tokens ?? false);
    const plan = this.plan({ ...body, max_tokens: body.max_completion_tokens ?? body.max_tokens }, [prompt], CHAT);
    await this.generate(res, plan, modelName, CHAT);
  }

  private async generate(res: ServerResponse, plan: Plan, model: string, format: Format): Promise<void> {
    if (this.engine.dead) throw new EngineDeadError();
    // vLLM's load tracking counts the generation endpoints only.
    this.engine.serverLoad++;
    try {
      await this.respond(res, plan, model, format);
    } finally {
      this.engine.serverLoad--;
    }
  }

  private async respond(res: ServerResponse, plan: Plan, model: string, format: Format): Promise<void> {
    const created = Math.floor(Date.now() / 1000);
    const abort = new AbortController();
    res.on("close", () => {
      if (!res.writableFinished) abort.abort();
    });
    const promptTokens = plan.prompts.reduce((s, ids) => s + ids.length, 0);
    let completionTokens = 0;
    const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) => ({ id: plan.requestId, object: format.chunkObject, created, model, choices, ...extra });
    const emit = (index: number, text: string, finish: string | null, ids: number[]) => {
      const extra = plan.continuousUsage ? { usage: usage(promptTokens, completionTokens) } : {};
      res.write(sse(chunk([format.chunkChoice(index, text, finish, plan.returnTokenIds ? ids : null)], extra)));
    };

    if (plan.stream) res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" });
    const jobs: Array<Promise<JobResult>> = [];
    plan.prompts.forEach((ids, i) => {
      for (let j = 0; j < plan.n; j++) {
        const index = i * plan.n + j;
        const maxTokens = plan.maxTokens[i];
        if (plan.stream && format.openingChoice) res.write(sse(chunk([format.openingChoice(index)])));
        let produced = 0;
        const job: Job = {
          requestId: `${plan.requestId}-${index}`,
          promptIds: ids,
          maxTokens,
          sampling: plan.sampling,
          kvTransferParams: plan.kvTransferParams,
          signal: abort.signal,
          onToken: plan.stream
            ? (t: Token) => {
                completionTokens++;
                emit(index, t.text, ++produced === maxTokens ? "length" : null, [t.id]);
              }
            : undefined,
        };
        jobs.push(
          this.engine.run(job).then((r) => {
            if (plan.stream && r.finishReason === "stop") {
              completionTokens++;
              emit(index, "", "stop", []);
            }
            if (plan.stream && r.finishReason === "abort") emit(index, "", "abort", []);
            return r;
          }),
        );
      }
    });

    let results: JobResult[];
    try {
      results = await Promise.all(jobs);
    } catch (err) {
      abort.abort();
      if (!plan.stream || err instanceof AbortedError) throw err;
      // Mid-stream failures travel as an error event, then [DONE], as vLLM's stream generators do.
      res.write(sse(errorResponse(err).body()));
      res.end(sse("[DONE]"));
      return;
    }
    const completion = results.reduce((s, r) => s + r.completionTokens, 0);
    if (plan.stream) {
      if (plan.includeUsage) res.write(sse(chunk([], { usage: usage(promptTokens, completion) })));
      res.end(sse("[DONE]"));
      return;
    }
    const kv = results[0]?.kvTransferParams ?? null;
    sendJson(res, 200, {
      id: plan.requestId,
      object: format.object,
      created,
      model,
      choices: results.map((r, index) =>
        format.choice(
          index,
          r.tokens.map((t) => t.text).join(""),
          r.finishReason,
          index === 0 ? kv : null,
          plan.returnTokenIds ? { produced: r.tokens.map((t) => t.id), prompt: plan.prompts[Math.floor(index / plan.n)] } : null,
        ),
      ),
      service_tier: null,
      system_fingerprint: null,
      usage: { ...usage(promptTokens, completion), prompt_tokens_details: null },
      prompt_logprobs: null,
      kv_transfer_params: kv,
    });
  }

  listen(host: string | null, port: number): Promise<void> {
    return listenOn(this.http, host, port);
  }

  close(): Promise<void> {
    return closeServer(this.http);
  }
}

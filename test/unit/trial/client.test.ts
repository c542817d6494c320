import { expect } from "chai";
import { once } from "node:events";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { runPoint, type RunPointOptions } from "../../../lib/trial/client";
import { summarise } from "../../../lib/trial/summary";
import type { TrialPoint } from "../../../lib/trial/types";

// A loopback engine that streams as vLLM's serving_completion does: one `data:` event per token with
// `choices[0].text` as a delta, finish_reason "length" on the last, then the usage chunk and [DONE].
type Handler = (req: http.IncomingMessage, body: Record<string, unknown>, res: http.ServerResponse) => void;

interface Seen {
  headers: http.IncomingHttpHeaders;
  body: Record<string, unknown>;
  path: string;
}

const sse = (data: unknown) => `data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`;
const chunk = (id: string, choices: unknown[], extra: Record<string, unknown> = {}) => ({ id, object: "text_completion", created: 1, model: "m", choices, ...extra });
const choice = (text: string, finish: string | null) => ({ index: 0, text, logprobs: null, finish_reason: finish, stop_reason: null });

/** Streams `max_tokens` token events, each on its own turn of the event loop, then usage and [DONE]. */
async function streamTokens(res: http.ServerResponse, body: Record<string, unknown>): Promise<void> {
  const n = body.max_tokens as number;
  const prompt = (body.prompt as number[]).length;
  res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8" });
  for (let i = 1; i <= n; i++) {
    res.write(sse(chunk("cmpl-1", [choice(`t${i}`, i === n ? "length" : null)])));
    await new Promise((r) => setImmediate(r));
  }
  res.write(sse(chunk("cmpl-1", [], { usage: { prompt_tokens: prompt, completion_tokens: n, total_tokens: prompt + n } })));
  res.end(sse("[DONE]"));
}

describe("trial: load client against a loopback server", function () {
  let server: http.Server;
  let baseUrl: string;
  let handler: Handler;
  let seen: Seen[];
  const sockets = new Set<import("node:net").Socket>();

  before(async () => {
    server = http.createServer((req, res) => {
      let text = "";
      req.setEncoding("utf8");
      req.on("data", (d: string) => (text += d));
      req.on("end", () => {
        const body = JSON.parse(text) as Record<string, unknown>;
        seen.push({ headers: req.headers, body, path: req.url ?? "" });
        handler(req, body, res);
      });
    });
    server.on("connection", (s) => {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  beforeEach(() => {
    seen = [];
    handler = (_req, body, res) => void streamTokens(res, body);
  });

  after(async () => {
    for (const s of sockets) s.destroy();
    server.close();
    await once(server, "close");
  });

  const point = (over: Partial<TrialPoint> = {}): TrialPoint => ({
    id: "p",
    rate: 100,
    requests: 3,
    arrival: "constant",
    seed: 1,
    mix: [{ promptTokens: 40, outputTokens: 5, weight: 1 }],
    ...over,
  });
  const options = (over: Partial<RunPointOptions> = {}): RunPointOptions => ({
    baseUrl,
    model: "m",
    point: point(),
    vocabSize: 1000,
    requestTimeoutS: 10,
    requestIdPrefix: "trial-t-",
    ...over,
  });

  it("streams each request as vllm bench does and records tokens, usage, finish reason and times", async () => {
    const run = await runPoint(options({ apiKey: "sk-test" }));
    expect(run.records.map((r) => r.status)).to.deep.equal(["ok", "ok", "ok"]);
    for (const r of run.records) {
      expect(r.httpStatus).to.equal(200);
      expect(r.usage).to.deep.equal({ promptTokens: 40, completionTokens: 5 });
      expect(r.finishReason).to.equal("length");
      expect(r.chunkGapsS).to.have.length(4);
      expect(r.sentS).to.be.at.least(r.dueS);
      expect(r.firstTokenS).to.be.greaterThan(r.sentS);
      expect(r.endS).to.be.closeTo(r.firstTokenS! + r.chunkGapsS.reduce((a, b) => a + b, 0), 1e-9);
    }
    expect(run.records.map((r) => r.dueS)).to.deep.equal([0.01, 0.02, 0.03]);
    expect(seen.map((s) => s.path)).to.deep.equal(["/v1/completions", "/v1/completions", "/v1/completions"]);
    expect(seen.map((s) => s.headers["x-request-id"]).sort()).to.deep.equal(["trial-t-0", "trial-t-1", "trial-t-2"]);
    expect(seen[0].headers.authorization).to.equal("Bearer sk-test");
    const { prompt, ...rest } = seen[0].body;
    expect(rest).to.deep.equal({ model: "m", max_tokens: 5, min_tokens: 5, ignore_eos: true, temperature: 0, stream: true, stream_options: { include_usage: true } });
    expect(prompt).to.have.length(40);
    expect(run.settings).to.deep.equal({ arrival: "constant", seed: 1, requestTimeoutS: 10, connections: 3 });
    expect(run.start.monoS).to.equal(0);
    expect(run.end.monoS).to.be.at.least(Math.max(...run.records.map((r) => r.endS)));
    expect(run.end.wallMs - run.start.wallMs).to.be.closeTo(run.end.monoS * 1000, 50);
    const s = summarise(run, { ttftS: 10, tpotS: 10 });
    expect([s.completed, s.failed, s.total_output_tokens, s.total_input_tokens, s.good]).to.deep.equal([3, 0, 15, 120, 3]);
  });

  it("sends no Authorization header without an API key, and keeps a base URL's path", async () => {
    await runPoint(options({ baseUrl: `${baseUrl}/narwhal/`, point: point({ requests: 1 }) }));
    expect(seen[0].headers.authorization).to.equal(undefined);
    expect(seen[0].path).to.equal("/narwhal/v1/completions");
  });

  it("records a non-200 reply with its status and the head of its body", async () => {
    handler = (_req, _body, res) => {
      res.writeHead(503, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: "no engine", type: "ServiceUnavailable", padding: "x".repeat(400) } }));
    };
    const run = await runPoint(options({ point: point({ requests: 1 }) }));
    const r = run.records[0];
    expect([r.status, r.httpStatus]).to.deep.equal(["error", 503]);
    expect(r.error).to.match(/^HTTP 503: \{"error":\{"message":"no engine"/);
    expect(r.error).to.have.length("HTTP 503: ".length + 200);
    expect(summarise(run, { ttftS: 1, tpotS: 1 }).failed).to.equal(1);
  });

  it("counts an error event on a 200 stream as a failure (vllm bench would not)", async () => {
    handler = (_req, _body, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(sse(chunk("c", [choice("a", null)])));
      res.write(sse({ error: { message: "engine died", type: "InternalServerError", param: null, code: 500 } }));
      res.end(sse("[DONE]"));
    };
    const r = (await runPoint(options({ point: point({ requests: 1 }) }))).records[0];
    expect([r.status, r.httpStatus, r.error]).to.deep.equal(["error", 200, "error event mid-stream: engine died"]);
    expect(r.firstTokenS).to.be.a("number");
  });

  it("counts a stream without any choice chunk, and one cut before [DONE], as failures", async () => {
    handler = (req, _body, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      if (req.headers["x-request-id"] === "trial-t-0") {
        res.write(sse(chunk("c", [], { usage: { prompt_tokens: 40, completion_tokens: 0, total_tokens: 40 } })));
        res.end(sse("[DONE]"));
      } else res.end(sse(chunk("c", [choice("a", "length")])));
    };
    const run = await runPoint(options({ point: point({ requests: 2 }) }));
    expect(run.records.map((r) => r.error)).to.deep.equal(["the stream ended without a chunk carrying a choice", "the stream ended before its [DONE] event"]);
  });

  it("records a connection reset mid-stream", async () => {
    handler = (req, _body, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(sse(chunk("c", [choice("a", null)])), () => req.socket.destroy());
    };
    const r = (await runPoint(options({ point: point({ requests: 1 }) }))).records[0];
    expect(r.status).to.equal("error");
    expect(r.error).to.match(/^connection failed/);
  });

  it("ends a request that outlives trial.requestTimeoutS, and the point with it", async () => {
    handler = (_req, _body, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(sse(chunk("c", [choice("a", null)]))); // and never more
    };
    const run = await runPoint(options({ point: point({ requests: 1 }), requestTimeoutS: 0.3 }));
    const r = run.records[0];
    expect(r.error).to.equal("no complete reply within trial.requestTimeoutS (0.3 s)");
    expect(r.endS - r.sentS).to.be.within(0.3, 2);
    expect(run.end.monoS).to.be.below(5);
  });

  it("is open loop: later requests go out on time while the server has answered none", async () => {
    // The server holds every reply until all requests have arrived; a closed loop would never send the second.
    const n = 20;
    const held: Array<() => void> = [];
    let heldAtOnce = 0;
    handler = (_req, body, res) => {
      held.push(() => void streamTokens(res, body));
      heldAtOnce = Math.max(heldAtOnce, held.length);
      if (held.length === n) held.splice(0).forEach((go) => go());
    };
    const run = await runPoint(options({ point: point({ requests: n, rate: 50 }) }));
    expect(heldAtOnce).to.equal(n);
    expect(run.records.every((r) => r.status === "ok")).to.equal(true);
    const s = summarise(run, { ttftS: 10, tpotS: 10 });
    // Request i is sent at its due time, not after i - 1 answers (the server answered none before the last
    // arrived): lag stays within a few of the 20 ms intervals, timer granularity and a loaded machine's stalls.
    expect(s.max_send_lag_ms).to.be.below(60);
    expect(s.achieved_send_rate).to.be.closeTo((50 * n) / (n - 1), 5);
    // The first request waited for the last one's arrival: its TTFT covers the whole schedule.
    expect(run.records[0].firstTokenS! - run.records[0].sentS).to.be.at.least(run.records[n - 1].sentS - run.records[0].sentS);
  });

  it("refuses options it cannot run with, naming the field", async () => {
    let err: Error | undefined;
    await runPoint(options({ requestTimeoutS: 0 })).catch((e: Error) => (err = e));
    expect(err?.message).to.equal("load client: trial.requestTimeoutS is 0; it must be a number of seconds above 0.");
    await runPoint(options({ baseUrl: "127.0.0.1:80" })).catch((e: Error) => (err = e));
    expect(err?.message).to.match(/^load client: baseUrl is "127.0.0.1:80"; it must be an http/);
  });
});

import { expect } from "chai";
import * as http from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { classifyEngineFailure, connectionLost, EngineGoneError, probeOver, type EngineProbe } from "../../../lib/engine/gone";
import { DEFAULT_SWEEP } from "../../../lib/profiling/sweep";
import { Profiler } from "../../../lib/profiling/measure";
import type { EngineClient, Reply } from "../../../lib/profiling/client";
import { profileHttp, type ProfileHttp } from "../../../lib/profiling/engine-http";

/**
 * An engine on loopback that streams two tokens of a completion and then dies (its sockets and its
 * listener closed), or only drops that one connection, or is replaced by a process that started later.
 */
class LoopbackEngine {
  private server = http.createServer((req, res) => this.answer(req, res));
  private sockets = new Set<Socket>();
  processStart = 1000.5;
  port = 0;

  async start(port = 0): Promise<void> {
    this.server = http.createServer((req, res) => this.answer(req, res));
    this.server.on("connection", (s: Socket) => {
      this.sockets.add(s);
      s.on("close", () => this.sockets.delete(s));
    });
    await new Promise<void>((resolve) => this.server.listen(port, "127.0.0.1", resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  /** What happens after two streamed tokens: the process dies, or only the connection drops. */
  onStream: "die" | "drop" = "die";

  private answer(req: http.IncomingMessage, res: http.ServerResponse): void {
    if (req.url === "/health") return void res.writeHead(200).end();
    if (req.url === "/metrics") return void res.writeHead(200, { "content-type": "text/plain" }).end(`process_start_time_seconds ${this.processStart}\n`);
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write('data: {"choices":[{"text":"x"}]}\n\n');
      res.write('data: {"choices":[{"text":"x"}]}\n\n', () => {
        if (this.onStream === "drop") return void req.socket.destroy();
        void this.stop();
      });
    });
  }

  /** The process ends: every connection closed, nothing listening on the port. */
  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

const LOSS = Object.assign(new Error("fetch failed"), { cause: Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" }) });

describe("an engine that dies mid-measurement is named as gone, not as a transport error", () => {
  let engine: LoopbackEngine;
  let client: ProfileHttp;

  beforeEach(async () => {
    engine = new LoopbackEngine();
    await engine.start();
    client = profileHttp(`http://127.0.0.1:${engine.port}`, undefined, `e1 (http://127.0.0.1:${engine.port})`, 4);
  });
  afterEach(async () => {
    await client.destroy();
    await engine.stop().catch(() => undefined);
  });

  const streamed = async (): Promise<unknown> => {
    try {
      await client.stream("/v1/completions", { max_tokens: 16 }, () => undefined, 10);
    } catch (err) {
      return err;
    }
    throw new Error("the stream did not fail");
  };
  const context = () => ({ engineId: "e1", during: "profile", probe: probeOver((p) => client.get(p, 2)), processStartTime: 1000.5 });

  it("a stream cut by the engine's death, with /health then refused, is 'engine e1 process gone during profile' and says what to do", async () => {
    engine.onStream = "die";
    const err = await streamed();
    expect(connectionLost(err)).to.equal(true);
    const told = await classifyEngineFailure(err, context());
    expect(told).to.be.instanceOf(EngineGoneError);
    expect((told as EngineGoneError).code).to.equal("NARWHAL_ENGINE_GONE");
    expect((told as Error).message).to.match(
      new RegExp(
        "^engine e1 process gone during profile: its /health refuses connections \\(ECONNREFUSED\\); " +
          `the request had failed with UND_ERR_SOCKET \\(POST /v1/completions on e1 \\(http://127\\.0\\.0\\.1:${engine.port}\\): .+\\)\\. ` +
          "Run `pulumi up --refresh`: the refresh finds the engine down, and the up restarts it and measures it again$",
      ),
    );
  });

  it("a dropped connection to an engine that still answers as the measured process stays the transport error it was", async () => {
    engine.onStream = "drop";
    const err = await streamed();
    expect(connectionLost(err)).to.equal(true);
    expect(await classifyEngineFailure(err, context())).to.equal(err);
  });

  it("an engine answering again as another process (restarted) is gone too, naming both starts", async () => {
    engine.onStream = "drop";
    const err = await streamed();
    engine.processStart = 2000.25;
    const told = (await classifyEngineFailure(err, context())) as Error;
    expect(told.message).to.match(
      /^engine e1 process gone during profile: another process answers now \(process_start_time_seconds 2000\.25, the measured process started at 1000\.5\); the request had failed with UND_ERR_SOCKET /,
    );
  });

  it("asks nothing of the engine for a failure that is not a lost connection (a timeout, a refusal by status)", async () => {
    const untouchable: EngineProbe = {
      health: () => Promise.reject(new Error("probed")),
      processStart: () => Promise.reject(new Error("probed")),
    };
    const timeout = Object.assign(new Error("POST /v1/completions on e1: no answer within 5 s"), { cause: Object.assign(new Error("aborted"), { name: "TimeoutError" }) });
    expect(await classifyEngineFailure(timeout, { engineId: "e1", during: "calibration", probe: untouchable })).to.equal(timeout);
    const status = new Error("decode probe failed on e1 (500): boom");
    expect(await classifyEngineFailure(status, { engineId: "e1", during: "calibration", probe: untouchable })).to.equal(status);
  });

  it("the profiler reports a sweep whose engine died as gone, in its error and its kept record", async () => {
    // An engine double that answers /health once, then dies as the tokenize probe is sent.
    let alive = true;
    const dying: EngineClient = {
      label: "e0 at http://engine",
      get: async (path: string): Promise<Reply> => {
        if (!alive) throw Object.assign(new Error(`GET ${path} on e0: connect ECONNREFUSED`), { cause: Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), { code: "ECONNREFUSED" }) });
        return { status: 200, body: "" };
      },
      post: () => {
        alive = false;
        return Promise.reject(LOSS);
      },
      stream: () => Promise.reject(new Error("unreached")),
      now: () => 0,
    };
    const p = new Profiler(dying, { iid: "e0", model: "m", sweep: DEFAULT_SWEEP, probeTimeoutS: 5, requestTimeoutS: 5, processStartTime: 1000.5 });
    const err = await p.run().then(
      () => {
        throw new Error("the sweep did not stop");
      },
      (e: unknown) => e as EngineGoneError,
    );
    expect(err.code).to.equal("NARWHAL_ENGINE_GONE");
    expect(err.message).to.match(/^engine e0 process gone during profile: its \/health refuses connections \(ECONNREFUSED\); the request had failed with ECONNRESET \(fetch failed\)\. Run `pulumi up --refresh`/);
    expect(p.record.error).to.equal(`EngineGoneError: ${err.message}`);
  });
});

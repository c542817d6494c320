/**
 * The router's front (lib/router/front-py.ts) as it runs on a router host, from the project's own venv
 * (narwhal-inference's, which brings uvicorn and httpx), in front of a backend this test controls: what it
 * passes through, how a hold keeps requests waiting and ends, a dead backend answered at once, and a client
 * that hangs up taking the backend's connection with it.
 */
import { expect } from "chai";
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import * as path from "node:path";
import { FRONT_PY, FRONT_STATUS_PATH } from "../../lib/router/front-py";
import { freePort, removeTemps, ROOT, tempDir } from "../unit/sim-engine/helpers";

const PYTHON = path.join(ROOT, ".tools", "venv", "bin", "python");

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: string;
}

describe("router front: a pass-through that holds requests while the router behind it is swapped", function () {
  this.timeout(60_000);
  let dir: string;
  let front: ChildProcess;
  let frontUrl: string;
  let backendPort: number;
  let backend: Server | undefined;
  const seen: Seen[] = [];
  let closedStreams = 0;

  /** The backend: echoes what it got, streams `/stream` slowly (one event a 100 ms, 50 in all). */
  async function startBackend(): Promise<void> {
    backend = createServer((req: IncomingMessage, res: ServerResponse) => {
      let body = "";
      req.on("data", (d: Buffer) => (body += d.toString()));
      req.on("end", () => {
        seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body });
        if (req.url === "/stream") {
          res.writeHead(200, { "content-type": "text/event-stream" });
          let n = 0;
          const tick = setInterval(() => {
            if (n++ === 50) {
              clearInterval(tick);
              res.end("data: [DONE]\n\n");
            } else res.write(`data: ${n}\n\n`);
          }, 100);
          res.on("close", () => {
            clearInterval(tick);
            if (n <= 50) closedStreams++;
          });
          return;
        }
        res.writeHead(201, { "content-type": "application/json", "x-backend": "yes" });
        res.end(JSON.stringify({ method: req.method, url: req.url, body }));
      });
    });
    await new Promise<void>((resolve) => backend!.listen(backendPort, "127.0.0.1", resolve));
  }
  async function stopBackend(): Promise<void> {
    const b = backend;
    backend = undefined;
    if (!b) return;
    b.closeAllConnections();
    await new Promise((resolve) => b.close(resolve));
  }

  /** Holds until `until` (epoch seconds), or releases when undefined, as the router's scripts do. */
  async function hold(until: number | undefined): Promise<void> {
    if (until === undefined) fs.rmSync(path.join(dir, "hold"), { force: true });
    else fs.writeFileSync(path.join(dir, "hold"), `${until}\n`);
    front.kill("SIGUSR1");
    if (until === undefined) return;
    // The front confirms a hold by echoing it (lib/router/front.ts waits for the same, 10 s).
    const deadline = Date.now() + 10_000;
    while (fs.readFileSync(path.join(dir, "held"), { encoding: "utf8", flag: "a+" }).trim() !== String(until)) {
      if (Date.now() > deadline) throw new Error("the front did not confirm the hold within 10 s");
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  const state = async () => (await (await fetch(`${frontUrl}${FRONT_STATUS_PATH}`)).json()) as { holding: boolean; held: number; retried: number; refused: number };

  before(async () => {
    dir = tempDir("router-front-");
    fs.writeFileSync(path.join(dir, "front.py"), FRONT_PY);
    backendPort = await freePort();
    const port = await freePort();
    frontUrl = `http://127.0.0.1:${port}`;
    await startBackend();
    front = spawn(PYTHON, [path.join(dir, "front.py"), "--host", "127.0.0.1", "--port", String(port), "--backend", `127.0.0.1:${backendPort}`, "--dir", dir], { stdio: ["ignore", "inherit", "inherit"] });
    // Bounded wait for the front to answer (python's start on a loaded machine).
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (await fetch(`${frontUrl}${FRONT_STATUS_PATH}`).then((r) => r.ok, () => false)) break;
      if (Date.now() > deadline) throw new Error("the front did not answer within 30 s");
      await new Promise((r) => setTimeout(r, 100));
    }
  });
  after(async () => {
    front?.kill();
    await stopBackend();
    removeTemps();
  });

  it("passes method, path, query, headers and body through, and the answer back (status, headers, body)", async () => {
    const res = await fetch(`${frontUrl}/v1/completions?x=1&y=%20`, { method: "PUT", headers: { "x-request-id": "r-1", authorization: "Bearer k" }, body: '{"prompt":"hi"}' });
    expect(res.status).to.equal(201);
    expect(res.headers.get("x-backend")).to.equal("yes");
    expect(await res.json()).to.deep.equal({ method: "PUT", url: "/v1/completions?x=1&y=%20", body: '{"prompt":"hi"}' });
    const got = seen[seen.length - 1];
    expect(got.headers).to.deep.include({ "x-request-id": "r-1", authorization: "Bearer k", host: `127.0.0.1:${backendPort}` });
  });

  it("streams an answer as the backend produces it", async () => {
    const t0 = Date.now();
    const res = await fetch(`${frontUrl}/stream`, { method: "POST" });
    const reader = res.body!.getReader();
    const first = await reader.read();
    // The first event arrives long before the stream ends (50 events, 100 ms apart).
    expect(Date.now() - t0).to.be.lessThan(3_000);
    expect(Buffer.from(first.value).toString()).to.match(/^data: 1\n\n/);
    let text = Buffer.from(first.value).toString();
    for (let r = await reader.read(); !r.done; r = await reader.read()) text += Buffer.from(r.value).toString();
    expect(text).to.match(/data: 50\n\ndata: \[DONE\]\n\n$/);
  });

  it("answers 502 at once when nothing serves behind it and no hold is on", async () => {
    await stopBackend();
    const t0 = Date.now();
    const res = await fetch(`${frontUrl}/health`);
    expect(res.status).to.equal(502);
    expect(res.headers.get("retry-after")).to.equal("1");
    expect(((await res.json()) as { error: { type: string } }).error.type).to.equal("router_unavailable");
    expect(Date.now() - t0).to.be.lessThan(5_000);
    expect((await state()).refused).to.be.greaterThan(0);
  });

  it("holds requests while a hold is on, and sends them to the backend that serves once it is released", async () => {
    await hold(Math.floor(Date.now() / 1000) + 60);
    expect(await state()).to.deep.include({ holding: true });
    const pending = fetch(`${frontUrl}/held`, { method: "POST", body: "wait" });
    // The backend comes back and the hold ends, as a swap's start does.
    await new Promise((r) => setTimeout(r, 300));
    await startBackend();
    await hold(undefined);
    const res = await pending;
    expect(res.status).to.equal(201);
    expect(((await res.json()) as { url: string }).url).to.equal("/held");
    const s = await state();
    expect(s).to.deep.include({ holding: false });
    expect(s.held).to.be.greaterThan(0);
  });

  it("ends a hold by itself at the time it names", async () => {
    await hold(Math.floor(Date.now() / 1000) + 2);
    const t0 = Date.now();
    const res = await fetch(`${frontUrl}/after-deadline`);
    expect(res.status).to.equal(201);
    expect(Date.now() - t0).to.be.within(200, 10_000);
    expect((await state()).holding).to.equal(false);
  });

  it("closes the backend's connection when the client hangs up mid-answer, so the router can cancel", async () => {
    const before = closedStreams;
    const abort = new AbortController();
    const res = await fetch(`${frontUrl}/stream`, { method: "POST", signal: abort.signal });
    const reader = res.body!.getReader();
    await reader.read();
    abort.abort();
    const deadline = Date.now() + 10_000;
    while (closedStreams === before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(closedStreams, "the backend saw its stream closed before it ended").to.equal(before + 1);
  });
});

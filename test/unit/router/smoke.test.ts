import { expect } from "chai";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { routerSmoke } from "../../../lib/router/smoke";

type Handler = (req: IncomingMessage, body: string, res: ServerResponse) => void;

/** A stand-in router on 127.0.0.1 answering with `handler`. */
async function serve(handler: Handler): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => handler(req, body, res));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, server };
}

const json = (res: ServerResponse, status: number, value: unknown) => {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(value));
};

describe("router: the demo's client check", () => {
  const servers: Server[] = [];
  afterEach(() => {
    for (const s of servers.splice(0)) {
      s.closeAllConnections();
      s.close();
    }
  });

  it("reads health and models, then completes with the first model listed", async () => {
    let asked: unknown;
    const { url, server } = await serve((req, body, res) => {
      if (req.url === "/health") return json(res, 200, { status: "ready", instances: 4 });
      if (req.url === "/v1/models") return json(res, 200, { data: [{ id: "tiny-llama" }] });
      asked = JSON.parse(body);
      return json(res, 200, { choices: [{ text: " world" }] });
    });
    servers.push(server);
    const smoke = await routerSmoke(url);
    expect(smoke).to.deep.equal({ health: { status: "ready", instances: 4 }, models: ["tiny-llama"], completion: " world" });
    expect(asked).to.deep.include({ model: "tiny-llama", max_tokens: 8, temperature: 0 });
  });

  it("names the step that failed: an error status, an empty model list, a silent router", async () => {
    const { url, server } = await serve((req, _body, res) => {
      if (req.url === "/health") return json(res, 200, { status: "ready" });
      if (req.url === "/v1/models") return json(res, 200, { data: [] });
      return undefined;
    });
    servers.push(server);
    const failing = await serve((_req, _body, res) => json(res, 503, { status: "starting" }));
    servers.push(failing.server);
    const silent = await serve(() => undefined);
    servers.push(silent.server);

    const messages = await Promise.all(
      [routerSmoke(url), routerSmoke(failing.url), routerSmoke(silent.url, { timeoutMs: 300 })].map((p) => p.then(() => "resolved", (e: Error) => e.message)),
    );
    expect(messages).to.deep.equal([
      "router GET /v1/models: it lists no model",
      'router GET /health: HTTP 503: {"status":"starting"}',
      "router GET /health: no answer within 300 ms",
    ]);
  });
});

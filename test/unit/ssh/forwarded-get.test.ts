import { expect } from "chai";
import { createServer, type Server } from "node:http";
import { connect } from "node:net";
import type { SshSession } from "../../../lib/ssh/client";
import { SshError } from "../../../lib/ssh/errors";
import { forwardedGet } from "../../../lib/ssh/forwarded-get";

/**
 * forwardedGet over the stream a session's host opens: here a plain TCP connection stands in for the SSH
 * channel (both are duplex streams), so the HTTP exchange and its bound are what is tested.
 */
const session = (open: (host: string, port: number) => Promise<unknown>) => ({ target: { alias: "h1" }, openTcp: open }) as unknown as SshSession;
const tcp = (host: string, port: number) => new Promise((resolve, reject) => {
  const s = connect(port, host, () => resolve(s));
  s.once("error", reject);
});

describe("ssh: an HTTP GET over a forwarded stream", () => {
  let server: Server;
  let port: number;
  const seen: Array<{ path?: string; host?: string }> = [];

  before(async () => {
    server = createServer((req, res) => {
      seen.push({ path: req.url, host: req.headers.host });
      if (req.url === "/slow/metrics") return; // never answers
      res.writeHead(req.url === "/metrics" ? 200 : 404, { "content-type": "text/plain" });
      res.end(req.url === "/metrics" ? "vllm:num_requests_running 0\n" : "Not Found");
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    port = (server.address() as { port: number }).port;
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  it("sends the path with the target's host header and returns the whole answer", async () => {
    const reply = await forwardedGet(session(tcp), { host: "127.0.0.1", port, path: "/metrics" }, { timeoutS: 5, timeoutName: "T_S", name: "engine e1 GET /metrics" });
    expect(reply).to.deep.equal({ status: 200, text: "vllm:num_requests_running 0\n" });
    expect(seen.at(-1)).to.deep.equal({ path: "/metrics", host: `127.0.0.1:${port}` });
    expect((await forwardedGet(session(tcp), { host: "127.0.0.1", port, path: "/other" }, { timeoutS: 5, timeoutName: "T_S", name: "x" })).status).to.equal(404);
  });

  it("gives up at its named bound, naming the host and the request", async () => {
    const t0 = Date.now();
    const err = await forwardedGet(session(tcp), { host: "127.0.0.1", port, path: "/slow/metrics" }, { timeoutS: 0.3, timeoutName: "ENGINE_METRICS_TIMEOUT_S", name: "engine e1 GET /metrics" }).then(
      () => undefined,
      (e: SshError) => e,
    );
    expect(Date.now() - t0).to.be.within(250, 3000);
    expect(err).to.be.instanceOf(SshError);
    expect(err!.code).to.equal("NARWHAL_SSH_TIMEOUT");
    expect(err!.message).to.equal("host h1: engine e1 GET /metrics: no whole answer within ENGINE_METRICS_TIMEOUT_S=0.3s");
  });

  it("passes on the forward's own refusal, and names a connection the far end drops", async () => {
    const refused = new SshError("NARWHAL_SSH_CONNECT", "host h1: cannot open a jump to 10.0.0.1:8100: Connection refused");
    const e1 = await forwardedGet(session(() => Promise.reject(refused)), { host: "10.0.0.1", port: 8100, path: "/metrics" }, { timeoutS: 5, timeoutName: "T_S", name: "x" }).catch((e: Error) => e);
    expect(e1).to.equal(refused);
    const dropping = createServer((req) => req.socket.destroy());
    await new Promise<void>((r) => dropping.listen(0, "127.0.0.1", r));
    try {
      const p = (dropping.address() as { port: number }).port;
      const e2 = (await forwardedGet(session(tcp), { host: "127.0.0.1", port: p, path: "/metrics" }, { timeoutS: 5, timeoutName: "T_S", name: "engine e2 GET /metrics" }).catch((e: SshError) => e)) as SshError;
      expect(e2.code).to.equal("NARWHAL_SSH_CONNECT");
      expect(e2.message).to.match(/^host h1: engine e2 GET \/metrics: socket hang up$/);
    } finally {
      dropping.close();
    }
  });
});

/**
 * The cheap observation of when each engine's process started (dynamic-providers/engine-http.ts), against
 * engines on loopback that count the /metrics reads they answer: a refresh's reads share one observation
 * per engine (every generation observes the same KV peers), a wave or a proof observes afresh.
 */
import { expect } from "chai";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { observeStarts, type Observed } from "../../../dynamic-providers/engine-http";

class CountingEngine {
  reads = 0;
  processStart = 1000.5;
  private server = http.createServer((req, res) => {
    if (req.url !== "/metrics") return void res.writeHead(404).end();
    this.reads++;
    res.writeHead(200, { "content-type": "text/plain" }).end(`process_start_time_seconds ${this.processStart}\n`);
  });

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

describe("observeStarts: one observation per engine per refresh", function () {
  this.timeout(30_000);
  const engines = [new CountingEngine(), new CountingEngine(), new CountingEngine(), new CountingEngine()];
  let members: Observed[] = [];

  before(async () => {
    members = await Promise.all(engines.map(async (e, i) => ({ engineId: `e${i + 1}`, hostAlias: "h1", url: await e.start(), processIdentity: { hostAlias: "h1", pid: 100 + i } })));
  });
  after(() => Promise.all(engines.map((e) => e.stop())));
  beforeEach(() => engines.forEach((e) => (e.reads = 0)));

  it("every generation's refresh read of its peers, and the wave's, reads each engine's /metrics once", async () => {
    // Each engine's generation observes the three others; the wave observes all four.
    const reads = [...members.map((self) => members.filter((m) => m !== self)), members].map((peers) => observeStarts(peers, "key-a", { forRefresh: true }));
    const seen = await Promise.all(reads);
    expect(seen[4]).to.deep.equal({ e1: 1000.5, e2: 1000.5, e3: 1000.5, e4: 1000.5 });
    expect(engines.map((e) => e.reads)).to.deep.equal([1, 1, 1, 1]);
  });

  it("a wave or a proof observes afresh, each time, whatever a refresh saw", async () => {
    await observeStarts(members, "key-b", { forRefresh: true });
    engines[1].processStart = 2000.25;
    const fresh = await observeStarts(members, "key-b");
    expect(fresh.e2).to.equal(2000.25);
    await observeStarts(members, "key-b");
    expect(engines.map((e) => e.reads)).to.deep.equal([3, 3, 3, 3]);
    engines[1].processStart = 1000.5;
  });

  it("observations are not shared across API keys, and an engine that does not answer is null", async () => {
    await observeStarts(members.slice(0, 1), "key-c", { forRefresh: true });
    await observeStarts(members.slice(0, 1), "key-d", { forRefresh: true });
    expect(engines[0].reads).to.equal(2);
    const gone = { engineId: "e9", hostAlias: "h1", url: "http://127.0.0.1:1", processIdentity: { hostAlias: "h1", pid: 9 } };
    expect(await observeStarts([gone], "key-c", { forRefresh: true })).to.deep.equal({ e9: null });
  });
});

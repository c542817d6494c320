import { expect } from "chai";
import { observeLiveness, restartReason } from "../../lib/liveness";
import type { Ask } from "../../lib/engine/generation";

const URL = "http://198.18.0.11:8101";
const answering = (status: number): Ask => async () => ({ status, body: "" });
const failing = (reason: string): Ask => async () => {
  throw Object.assign(new Error(`e1 on host sim1: GET ${URL}/health failed: ${reason}`), { reason });
};

describe("liveness: what a refresh's health probe means", () => {
  it("serving on 200, and nothing to restart", async () => {
    const seen = await observeLiveness(answering(200), URL, 15);
    expect(seen.observedState).to.equal("serving");
    expect(restartReason(seen)).to.equal(undefined);
  });

  it("down on any other answer: a dead engine, or another server on its port", async () => {
    expect(await observeLiveness(answering(503), URL, 15)).to.deep.equal({ observedState: "down", observedDetail: `${URL}/health answered HTTP 503 (the engine reports itself dead)` });
    expect((await observeLiveness(answering(404), URL, 15)).observedDetail).to.equal(`${URL}/health answered HTTP 404 (a dead engine or another server on its port)`);
  });

  it("down when the process is gone or hangs past the deadline; the reason is the probe's own words", async () => {
    const gone = await observeLiveness(failing("connection refused (ECONNREFUSED)"), URL, 15);
    expect(restartReason(gone)).to.equal(`${URL}/health: connection refused (ECONNREFUSED) (the engine process is gone)`);
    const hung = await observeLiveness(failing("no answer within 15 s"), URL, 15);
    expect(restartReason(hung)).to.equal(`${URL}/health: no answer within 15 s (the engine hangs)`);
  });

  it("unreachable, and nothing restarted on a guess, when the host itself does not answer", async () => {
    const seen = await observeLiveness(failing("host not reachable (EHOSTUNREACH)"), URL, 15);
    expect(seen).to.deep.equal({ observedState: "unreachable", observedDetail: `${URL}/health: host not reachable (EHOSTUNREACH); check the network to the host` });
    expect(restartReason(seen)).to.equal(undefined);
  });

  it("asks the router and Prometheus at their own health endpoints, in their own words", async () => {
    const paths: string[] = [];
    const gone: Ask = async (path) => {
      paths.push(path);
      throw Object.assign(new Error("refused"), { reason: "connection refused (ECONNREFUSED)" });
    };
    expect(restartReason(await observeLiveness(gone, URL, 15, "router"))).to.equal(`${URL}/health: connection refused (ECONNREFUSED) (the router process is gone)`);
    const hung: Ask = async (path) => {
      paths.push(path);
      throw Object.assign(new Error("slow"), { reason: "no answer within 15 s" });
    };
    expect(restartReason(await observeLiveness(hung, "http://p:9090", 15, "prometheus"))).to.equal("http://p:9090/-/healthy: no answer within 15 s (the prometheus hangs)");
    expect(paths).to.deep.equal(["/health", "/-/healthy"]);
  });
});

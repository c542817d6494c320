import { expect } from "chai";
import type { EngineClient } from "../../../lib/profiling/client";
import { countedClient } from "../../../lib/profiling/counted-client";

/** A client whose every answer has the status the path maps to. */
function fake(statuses: Record<string, number>): EngineClient {
  const status = (path: string) => statuses[path] ?? 200;
  return {
    label: "engine e0",
    now: () => 0,
    get: async (path) => ({ status: status(path), body: "" }),
    post: async (path) => ({ status: status(path), body: "" }),
    stream: async (path) => ({ status: status(path) }),
  };
}

describe("profiling: the profile's own completions, as vLLM counts them", () => {
  it("counts completions answered in full, on post and stream, and nothing else", async () => {
    const c = countedClient(fake({ "/v1/chat/completions": 503 }));
    await c.post("/v1/completions", {}, 1);
    await c.stream("/v1/completions", {}, () => undefined, 1);
    await c.post("/tokenize", {}, 1);
    await c.get("/metrics", 1);
    await c.get("/health", 1);
    await c.post("/v1/chat/completions", {}, 1);
    expect(c.finished()).to.equal(2);
  });

  it("does not count a stream its consumer broke off", async () => {
    const inner = fake({});
    const c = countedClient({ ...inner, stream: async (path, body, onChunk) => (onChunk({ at: 0, event: { data: null } } as never), { status: 200 }) });
    await c.stream("/v1/completions", {}, () => void 0, 1);
    const broken = countedClient({ ...inner, stream: async () => Promise.reject(new Error("malformed SSE")) });
    await broken.stream("/v1/completions", {}, () => undefined, 1).catch(() => undefined);
    expect(c.finished()).to.equal(1);
    expect(broken.finished()).to.equal(0);
  });
});

import { expect } from "chai";
import { EngineError } from "../../../lib/engine/errors";
import {
  checkVersion,
  completionRequest,
  describeNetworkFailure,
  describeOwner,
  generationDigest,
  liveGeneration,
  observeGeneration,
  processIdentityProblem,
  proveLiveProcess,
  requireProvedGeneration,
  waitForHealth,
  type Clock,
  type ProofSubject,
} from "../../../lib/engine/generation";
import { metricsWithStart, PLAN, RECORDED, RECORDED_START, replay, SUBJECT } from "./helpers";

const EXPECTED = { version: "0.29.0", servedName: "tiny", planSha256: PLAN };
/** Computed independently: Python's json.dumps(sort_keys=True, separators=(",", ":")) and hashlib. */
const DIGEST_PID = "sha256:5c6dece1f6a8cdfd944297ca197835e26c664e9bf09124a2fa0fa74fa5304c06";
const CONTAINER = "0123456789abcdef".repeat(4);
const DIGEST_CONTAINER = "sha256:a2bc57fb477cb5f3b49751bc8d37d6f2c36a53b040885fcce45f5c0113ae62ac";

async function rejection(p: Promise<unknown>): Promise<EngineError> {
  try {
    await p;
  } catch (err) {
    return err as EngineError;
  }
  throw new Error("expected a rejection");
}

function noAnswer(code: string): Error {
  return Object.assign(new Error(`connect ${code} 127.0.0.1:8100`), { code });
}

/** A clock that only moves when the code under test sleeps (or a request "takes" time). */
function fakeClock(): Clock & { slept: number[] } {
  let t = 1_000_000;
  const slept: number[] = [];
  return { slept, now: () => t, sleep: async (ms) => void (slept.push(ms), (t += ms)) };
}

describe("engine live proof", () => {
  describe("generation digest", () => {
    it("is sha256 over canonical {processStartTime, pid, version, planSha256}", () => {
      const facts = { processStartTime: RECORDED_START, version: "0.29.0", planSha256: PLAN };
      expect(generationDigest({ ...facts, processIdentity: { hostAlias: "gpu-a", pid: 4242 } })).to.equal(DIGEST_PID);
      expect(generationDigest({ ...facts, processIdentity: { hostAlias: "gpu-a", containerId: CONTAINER } })).to.equal(DIGEST_CONTAINER);
    });

    it("ignores the host alias and moves with the start time, version and plan", () => {
      const base = { processStartTime: RECORDED_START, version: "0.29.0", planSha256: PLAN, processIdentity: { hostAlias: "gpu-a", pid: 4242 } };
      expect(generationDigest({ ...base, processIdentity: { hostAlias: "renamed", pid: 4242 } })).to.equal(DIGEST_PID);
      const moved = [
        { ...base, processStartTime: RECORDED_START + 1 },
        { ...base, version: "0.28.0" },
        { ...base, planSha256: "sha256:" + "cd".repeat(32) },
        { ...base, processIdentity: { hostAlias: "gpu-a", pid: 4243 } },
      ].map(generationDigest);
      expect(new Set([DIGEST_PID, ...moved]).size).to.equal(5);
    });
  });

  describe("proveLiveProcess (recorded simulator replies)", () => {
    it("runs the runbook's probes in order and binds the result to the process", async () => {
      const r = replay();
      const proof = await proveLiveProcess(r.ask, SUBJECT, EXPECTED);
      expect(proof).to.deep.equal({
        processStartTime: RECORDED_START,
        version: "0.29.0",
        servedModels: ["tiny"],
        completionText: JSON.parse(RECORDED["/v1/completions"].body).choices[0].text,
        generationDigest: DIGEST_PID,
      });
      expect(r.calls).to.deep.equal([
        { path: "/health" },
        { path: "/version" },
        { path: "/v1/models" },
        { path: "/metrics" },
        { path: "/v1/completions", body: { model: "tiny", prompt: "The sea is", max_tokens: 32, temperature: 0 } },
      ]);
      expect(completionRequest("tiny")).to.deep.equal({ model: "tiny", prompt: "The sea is", max_tokens: 32, temperature: 0 });
    });

    it("refuses another version and names who owns the endpoint (pid)", async () => {
      const r = replay({ "/version": { status: 200, body: '{"version":"0.28.0"}' } });
      const err = await rejection(proveLiveProcess(r.ask, SUBJECT, EXPECTED));
      expect(err.code).to.equal("NARWHAL_ENGINE_VERSION");
      expect(err.message).to.equal(
        'engine e1 on host gpu-a: /version at http://127.0.0.1:8100 returned "0.28.0"; the checked image expects "0.29.0". ' +
          "The endpoint is recorded as owned by pid 4242 on host gpu-a: check which process or container owns the port " +
          "(ss -ltnp, docker ps) and compare it with the recorded image and container ID; after the repair the proof is taken anew.",
      );
      expect(r.calls.map((c) => c.path)).to.deep.equal(["/health", "/version"]);
    });

    it("names a container owner by its short id", () => {
      const s: ProofSubject = { ...SUBJECT, processIdentity: { hostAlias: "gpu-b", containerId: CONTAINER } };
      expect(describeOwner(s.processIdentity)).to.equal("container 0123456789ab on host gpu-b");
      expect(() => checkVersion(s, "0.28.0", "0.29.0")).to.throw("recorded as owned by container 0123456789ab on host gpu-b");
    });

    it("fails each later check with its own code and message", async () => {
      const cases: Array<[Record<string, { status: number; body: string }>, string, string]> = [
        [
          { "/health": { status: 503, body: "" } },
          "NARWHAL_ENGINE_RESPONSE",
          "engine e1 on host gpu-a: GET http://127.0.0.1:8100/health answered HTTP 503: (empty body)",
        ],
        [
          { "/v1/models": RECORDED["/v1/models (no key)"] },
          "NARWHAL_ENGINE_UNAUTHORIZED",
          "engine e1 on host gpu-a: GET http://127.0.0.1:8100/v1/models answered 401 Unauthorized: the engine refused the API key sent as " +
            "Bearer (or none was sent); set the engine API key it was started with",
        ],
        [
          { "/v1/models": { status: 200, body: '{"object":"list","data":[{"id":"other"},{"id":"other-2"}]}' } },
          "NARWHAL_ENGINE_MODEL",
          'engine e1 on host gpu-a: /v1/models at http://127.0.0.1:8100 lists "other", "other-2", not the served model "tiny"; ' +
            "check --served-model-name in the launch plan",
        ],
        [
          { "/metrics": metricsWithStart(undefined) },
          "NARWHAL_ENGINE_PROCESS_START",
          "engine e1 on host gpu-a: /metrics at http://127.0.0.1:8100 has no process_start_time_seconds, so the live process cannot be " +
            "identified; vLLM drops the process_* series with --api-server-count > 1 (multiprocess Prometheus): run one API server",
        ],
        [
          { "/v1/completions": { status: 200, body: '{"choices":[{"index":0,"text":""}]}' } },
          "NARWHAL_ENGINE_COMPLETION",
          'engine e1 on host gpu-a: the 32-token temperature-0 completion at http://127.0.0.1:8100 returned no text: "{\\"choices\\":[{\\"index\\":0,\\"text\\":\\"\\"}]}"',
        ],
        [
          { "/version": { status: 200, body: "<html>" } },
          "NARWHAL_ENGINE_RESPONSE",
          'engine e1 on host gpu-a: GET http://127.0.0.1:8100/version did not answer JSON: "<html>"',
        ],
      ];
      for (const [overrides, code, message] of cases) {
        const err = await rejection(proveLiveProcess(replay(overrides).ask, SUBJECT, EXPECTED));
        expect(err.code, message).to.equal(code);
        expect(err.message).to.equal(message);
      }
    });
  });

  describe("waitForHealth (bounded)", () => {
    it("polls until /health answers 200", async () => {
      const clock = fakeClock();
      const refused = new EngineError("NARWHAL_ENGINE_HTTP", "x", "connection refused (ECONNREFUSED)");
      const r = replay({ "/health": [refused, refused, { status: 200, body: "" }] });
      await waitForHealth(r.ask, SUBJECT, 10, clock);
      expect(r.calls).to.have.length(3);
      expect(clock.slept).to.deep.equal([250, 250]);
    });

    it("gives up at the deadline, naming the engine, host, wait and last answer", async () => {
      const clock = fakeClock();
      const refused = new EngineError("NARWHAL_ENGINE_HTTP", "x", "connection refused (ECONNREFUSED)");
      const err = await rejection(waitForHealth(replay({ "/health": refused }).ask, SUBJECT, 3, clock));
      expect(err.code).to.equal("NARWHAL_ENGINE_NOT_HEALTHY");
      expect(err.message).to.equal(
        "engine e1 on host gpu-a: /health at http://127.0.0.1:8100 did not answer 200 within 3 s (last: connection refused (ECONNREFUSED)); " +
          "no proof was taken. Check that the engine runs (pid 4242 on host gpu-a) and read its log for the cause.",
      );
      expect(clock.slept.reduce((a, b) => a + b, 0)).to.be.at.most(3000);
    });

    it("reports a dead engine (503) as such", async () => {
      const err = await rejection(waitForHealth(replay({ "/health": { status: 503, body: "" } }).ask, SUBJECT, 1, fakeClock()));
      expect(err.reason).to.equal("HTTP 503 (the engine is dead)");
    });
  });

  describe("observeGeneration (refresh)", () => {
    const recorded = { generationDigest: DIGEST_PID, processStartTime: RECORDED_START, version: "0.29.0", planSha256: PLAN };

    it("sees the proved process", async () => {
      const r = replay();
      expect(await observeGeneration(r.ask, SUBJECT, recorded)).to.deep.equal({
        observedGeneration: DIGEST_PID,
        observedState: "proved",
        observedDetail: `the proved process serves (process_start_time_seconds ${RECORDED_START})`,
      });
      expect(r.calls.map((c) => c.path)).to.deep.equal(["/health", "/metrics", "/version"]);
    });

    it("sees a restart, a version change, a dead and an unreachable engine", async () => {
      const restarted = await observeGeneration(replay({ "/metrics": metricsWithStart(1795946000.5) }).ask, SUBJECT, recorded);
      expect(restarted.observedState).to.equal("restarted");
      expect(restarted.observedDetail).to.equal(`process_start_time_seconds 1795946000.5, proved ${RECORDED_START}`);
      expect(restarted.observedGeneration).to.match(/^sha256:[0-9a-f]{64}$/).and.not.equal(DIGEST_PID);

      const version = await observeGeneration(replay({ "/version": { status: 200, body: '{"version":"0.29.1"}' } }).ask, SUBJECT, recorded);
      expect(version).to.include({ observedState: "version-changed", observedDetail: '/version "0.29.1", proved "0.29.0"' });

      expect(await observeGeneration(replay({ "/health": { status: 503, body: "" } }).ask, SUBJECT, recorded)).to.deep.equal({
        observedGeneration: "none",
        observedState: "dead",
        observedDetail: "/health answered HTTP 503",
      });
      const gone = new EngineError("NARWHAL_ENGINE_HTTP", "x", "connection refused (ECONNREFUSED)");
      expect(await observeGeneration(replay({ "/health": gone }).ask, SUBJECT, recorded)).to.deep.equal({
        observedGeneration: "none",
        observedState: "unreachable",
        observedDetail: "/health: connection refused (ECONNREFUSED)",
      });
      const unidentified = await observeGeneration(replay({ "/metrics": metricsWithStart(undefined) }).ask, SUBJECT, recorded);
      expect(unidentified).to.include({ observedGeneration: "none", observedState: "unidentified" });
    });
  });

  describe("liveGeneration and requireProvedGeneration (capture)", () => {
    it("passes for the proved process and names both digests after a restart", async () => {
      const live = await liveGeneration(replay().ask, SUBJECT, PLAN);
      expect(live).to.deep.equal({ generationDigest: DIGEST_PID, processStartTime: RECORDED_START, version: "0.29.0" });
      requireProvedGeneration(SUBJECT, live, DIGEST_PID, "captured");
      const other = "sha256:" + "0".repeat(64);
      expect(() => requireProvedGeneration(SUBJECT, live, other, "captured")).to.throw(
        `engine e1 on host gpu-a: the engine restarted since it was proved: the live generation at http://127.0.0.1:8100 is ${DIGEST_PID} ` +
          `(process_start_time_seconds ${RECORDED_START}, version "0.29.0"), the proved one ${other}; nothing was captured. ` +
          "Refresh (pulumi up --refresh) so the engine generation is proved again, then retry.",
      );
    });

    it("refuses a dead engine", async () => {
      const err = await rejection(liveGeneration(replay({ "/health": { status: 503, body: "" } }).ask, SUBJECT, PLAN));
      expect(err.code).to.equal("NARWHAL_ENGINE_NOT_HEALTHY");
      expect(err.message).to.equal("engine e1 on host gpu-a: /health at http://127.0.0.1:8100 answered HTTP 503 (the engine is dead); the proved process is not serving");
    });
  });

  describe("inputs and failures", () => {
    it("accepts exactly one of pid or containerId", () => {
      const cases: Array<[unknown, string | undefined]> = [
        [{ hostAlias: "h", pid: 7 }, undefined],
        [{ hostAlias: "h", containerId: CONTAINER.slice(0, 12) }, undefined],
        [{ hostAlias: "h" }, "exactly one of pid or containerId must be set"],
        [{ hostAlias: "h", pid: 7, containerId: CONTAINER }, "exactly one of pid or containerId must be set"],
        [{ hostAlias: "", pid: 7 }, "hostAlias must be a non-empty string"],
        [{ hostAlias: "h", pid: 0 }, "pid must be a positive integer, got 0"],
        [{ hostAlias: "h", containerId: "web-1" }, 'containerId must be a Docker container id (12-64 lowercase hex digits), got "web-1"'],
        [null, "expected {hostAlias, pid} or {hostAlias, containerId}"],
      ];
      for (const [id, problem] of cases) expect(processIdentityProblem(id), JSON.stringify(id)).to.equal(problem);
    });

    it("describes a request that got no answer", () => {
      const cases: Array<[unknown, string]> = [
        [noAnswer("ECONNREFUSED"), "connection refused (ECONNREFUSED)"],
        [Object.assign(new Error("The operation was aborted due to timeout"), { name: "TimeoutError" }), "no answer within 5 s"],
        [Object.assign(new Error("Headers Timeout Error"), { code: "UND_ERR_HEADERS_TIMEOUT" }), "no answer within 5 s"],
        [noAnswer("EHOSTUNREACH"), "host not reachable (EHOSTUNREACH)"],
        [Object.assign(new Error("other side closed"), { code: "UND_ERR_SOCKET" }), "connection closed by the engine (UND_ERR_SOCKET)"],
        [Object.assign(new Error("weird"), { code: "EWEIRD" }), "weird (EWEIRD)"],
      ];
      for (const [err, text] of cases) expect(describeNetworkFailure(err, 5)).to.equal(text);
    });
  });
});

import { expect } from "chai";
import { spawnSync } from "node:child_process";
import { drainBoundS, drainScript, kvLeaseOf, parseDrainOutcome } from "../../../lib/router/drain";
import { provider } from "../../../dynamic-providers/engine-drain/provider";
import type { EngineDrainOutputs } from "../../../dynamic-providers/engine-drain/check";
import { UNKNOWN } from "../../../lib/unknown";

describe("router drain before an engine's process is replaced", () => {
  describe("the outcome the drain script prints", () => {
    it("is its last JSON line, with the wait when the router drained the engine", () => {
      expect(parseDrainOutcome('noise\n{"drained": true, "reason": "done", "waitedS": 1.4}\n')).to.deep.equal({ drained: true, reason: "done", waitedS: 1.4 });
      expect(parseDrainOutcome('{"drained": false, "reason": "refused"}')).to.deep.equal({ drained: false, reason: "refused" });
    });

    it("is no drain when the script printed none, naming what it printed", () => {
      expect(parseDrainOutcome("")).to.deep.equal({ drained: false, reason: "the drain printed no outcome" });
      expect(parseDrainOutcome("Traceback\nValueError: x\n")).to.deep.equal({ drained: false, reason: "the drain printed no outcome: Traceback | ValueError: x" });
      expect(parseDrainOutcome('{"drained": "yes"}').drained).to.equal(false);
    });
  });

  it("the script drains nothing on a host with no router installed, exiting 0", () => {
    const r = spawnSync("sh", ["-c", drainScript({ python: "/nonexistent dir/python", backendPort: 8001, engineId: "e2", deadlineS: 60, engineUrl: "http://10.0.0.2:8100", kvLeaseS: 30 })], { encoding: "utf8" });
    expect(r.status).to.equal(0);
    expect(parseDrainOutcome(r.stdout)).to.deep.equal({ drained: false, reason: "no router installed on this host (/nonexistent dir/python is missing): nothing to drain" });
  });

  it("reads the KV lease a drain waits out from the plan's connector config, else vLLM's 30 s", () => {
    const config = (extra: Record<string, unknown>) => ["vllm", "serve", "--kv-transfer-config", JSON.stringify({ kv_connector: "NixlConnector", kv_connector_extra_config: extra })];
    expect(kvLeaseOf(config({ kv_lease_duration: 45 }))).to.equal(45);
    expect(kvLeaseOf(config({}))).to.equal(30);
    expect(kvLeaseOf(["vllm", "serve"])).to.equal(30);
    expect(drainBoundS({ deadlineS: 60, kvLeaseS: 45 })).to.equal(60 + 45 + 15);
  });

  describe("when the provider drains", () => {
    const olds = { engineId: "e2", hostAlias: "r", login: {}, credentials: {}, script: "s", stopKey: "k1", timeoutS: 75 } as unknown as EngineDrainOutputs;

    it("a new stop key (the process is about to be replaced) is an update, which drains; unknown in a preview counts as new", async () => {
      expect(await provider.diff!("id", olds, { ...olds, stopKey: "k2" })).to.deep.include({ changes: true, replaces: [] });
      expect(await provider.diff!("id", olds, { ...olds, stopKey: UNKNOWN })).to.deep.include({ changes: true, replaces: [] });
    });

    it("the same stop key is no change, or an update that drains nothing (the engine keeps serving)", async () => {
      expect(await provider.diff!("id", olds, { ...olds })).to.deep.include({ changes: false });
      expect(await provider.diff!("id", olds, { ...olds, script: "s2" })).to.deep.include({ changes: true, replaces: [] });
      const kept = await provider.update!("id", { ...olds, lastDrain: { drained: true, reason: "r", at: "t" } }, { ...olds, script: "s2" });
      expect(kept.outs).to.deep.include({ script: "s2", lastDrain: { drained: true, reason: "r", at: "t" } });
    });

    it("a create drains nothing: a new engine has no process, and an existing stack's engine is not being replaced", async () => {
      const created = await provider.create({ ...olds });
      expect(created.outs).to.not.have.property("lastDrain");
    });
  });
});

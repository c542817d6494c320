import { expect } from "chai";
import { releasesPeers, restartScope, routerRestartPolicy, versionAtLeast, NIXL_PEER_TEARDOWN_FIX } from "../../../lib/engine/restart-scope";
import { waveFor } from "../../../lib/engine/peer-wave";

const argv = (extra: Record<string, unknown> = {}) => ["vllm", "serve", "/models/m", "--kv-transfer-config", JSON.stringify({ kv_connector: "NixlConnector", kv_connector_extra_config: { backends: ["UCX"], ...extra } })];
const member = (engineId: string, nixlVersion: string | null, extra: Record<string, unknown> = {}) => ({ engineId, nixlVersion, argv: argv(extra) });

describe("restart scope: who restarts with an engine of a KV component", () => {
  it("compares NIXL release versions by their numeric parts", () => {
    expect(versionAtLeast("1.5.0", NIXL_PEER_TEARDOWN_FIX)).to.equal(true);
    expect(versionAtLeast("1.5", NIXL_PEER_TEARDOWN_FIX)).to.equal(true);
    expect(versionAtLeast("1.10.2", NIXL_PEER_TEARDOWN_FIX)).to.equal(true);
    expect(versionAtLeast("2.0.0rc1", NIXL_PEER_TEARDOWN_FIX)).to.equal(true);
    expect(versionAtLeast("1.4.1", NIXL_PEER_TEARDOWN_FIX)).to.equal(false);
    expect(versionAtLeast("0.7.1", NIXL_PEER_TEARDOWN_FIX)).to.equal(false);
    expect(versionAtLeast("", NIXL_PEER_TEARDOWN_FIX)).to.equal(false);
  });

  it("the whole component below NIXL 1.5.0, naming the versions and engines (#49238)", () => {
    const scope = restartScope([member("e1", "0.7.1"), member("e2", "1.5.0"), member("e3", null)]);
    expect(scope.kind).to.equal("component");
    expect(scope.reason).to.match(/^NIXL 0\.7\.1, unknown on e1, e3 predates 1\.5\.0 \(ai-dynamo\/nixl #1987\)/).and.include("vLLM #49238");
  });

  it("the whole component where a member's peers are CUDA IPC peers that keep a stopped peer mapped (narwhal's peer_release)", () => {
    expect(releasesPeers(argv())).to.equal(true);
    expect(releasesPeers(argv({ engine_ttl: 600 }))).to.equal(false);
    expect(releasesPeers(["vllm", "serve", "m", "--kv-transfer-config", "{not json"])).to.equal(false);
    const scope = restartScope([member("e1", "1.5.0"), member("e2", "1.5.2", { engine_ttl: 600 })]);
    expect(scope).to.deep.include({ kind: "component" });
    expect(scope.reason).to.match(/^e2 has CUDA IPC peers \(engine_ttl\)/);
  });

  it("one engine where every member runs NIXL 1.5.0 or later and releases its peers: the wave restarts nobody else", () => {
    const scope = restartScope([member("e1", "1.5.0"), member("e2", "1.5.2")]);
    expect(scope.kind).to.equal("engine");
    const restarted = [{ engineId: "e1", reason: "process start 1 -> 2" }];
    expect(waveFor(["e1", "e2"], restarted, scope)).to.deep.equal([]);
    expect(waveFor(["e1", "e2"], restarted, restartScope([member("e1", "0.7.1"), member("e2", "0.7.1")]))).to.deep.equal(["e2"]);
    // A wave recorded before scopes restarts the component, as it always did.
    expect(waveFor(["e1", "e2"], restarted)).to.deep.equal(["e2"]);
  });

  it("the router's policy is narwhal's whole wave only where narwhal asks for it: CUDA IPC peers, not an old NIXL", () => {
    expect(routerRestartPolicy([member("e1", "0.7.1"), member("e2", "0.7.1")])).to.deep.include({ policy: "individual" });
    const wave = routerRestartPolicy([member("e1", "1.5.0"), member("e2", "1.5.0", { engine_ttl: 600 }), member("e3", "1.5.0", { engine_ttl: 60 })]);
    expect(wave.policy).to.equal("whole_wave");
    expect(wave.reason).to.match(/^e2, e3 have CUDA IPC peers \(engine_ttl\)/).and.include("the router holds, drains and readmits the whole fleet as one wave");
  });
});

import { expect } from "chai";
import { installKey, installScript, revisionFolder, revisionOf, venvDir } from "../../../lib/router/install";
import { localAddress, profileStorePath, routerArgv, routerStartScript, routerUrl } from "../../../lib/router/serve";
import { judgeRouterProof, type RouterProof } from "../../../lib/router/proof";

const KEY = "sk-never-on-a-command-line";

describe("router: install revisions", () => {
  it("a version and a bundle name their revision and their own folder", () => {
    expect(revisionOf({ kind: "version", version: "0.7.0" })).to.equal("narwhal-inference==0.7.0");
    expect(revisionOf({ kind: "bundle", sha256: "ab".repeat(32) })).to.equal(`bundle sha256:${"ab".repeat(32)}`);
    expect(revisionFolder({ kind: "bundle", sha256: "ab".repeat(32) })).to.equal("bundle-abababababababab");
    expect(venvDir({ installDir: "/srv/n", source: { kind: "version", version: "0.7.0" } })).to.equal("/srv/n/narwhal-inference-0.7.0/venv");
  });

  it("a new revision or wheel source is a new install key; the same inputs are the same key", () => {
    const base = { source: { kind: "version", version: "0.7.0" } as const, installDir: "/srv/n", timeoutS: 600 };
    expect(installKey(base)).to.equal(installKey({ ...base, timeoutS: 30 }));
    expect(installKey(base)).to.not.equal(installKey({ ...base, source: { kind: "version", version: "0.7.1" } }));
    expect(installKey(base)).to.not.equal(installKey({ ...base, wheelhouse: "/srv/wheels" }));
  });

  it("pip reads the wheelhouse without the index when one is configured", () => {
    const script = installScript({ source: { kind: "version", version: "0.7.0" }, installDir: "/srv/n", wheelhouse: "/srv/wheels", timeoutS: 600 });
    expect(script).to.contain("--no-index --find-links '/srv/wheels' 'narwhal-inference==0.7.0'");
  });
});

describe("router: serve scripts", () => {
  const options = {
    runDir: "/var/lib/narwhal-fleet/dev/router",
    binDir: "/srv/n/narwhal-inference-0.7.0/venv/bin",
    bindAddress: "0.0.0.0",
    port: 8000,
    backendPort: 8001,
    fleetDocument: JSON.stringify({ engines: [], profiles: { path: "runs/profiles.json" } }),
    startTimeoutS: 120,
    stopTimeoutS: 30,
  };

  it("narwhal-serve's argv names the document and its loopback port behind the front, and nothing secret", () => {
    expect(routerArgv(options)).to.deep.equal(["/srv/n/narwhal-inference-0.7.0/venv/bin/narwhal-serve", "--fleet", "fleet.json", "--host", "127.0.0.1", "--port", "8001"]);
  });

  it("the key arrives on stdin: the start script never holds it", () => {
    const script = routerStartScript(options);
    expect(script).to.contain('cat > "$run/router.env.tmp"');
    expect(script).to.not.contain(KEY);
  });

  it("a wildcard bind is checked on loopback; URLs bracket IPv6", () => {
    expect(localAddress("0.0.0.0")).to.equal("127.0.0.1");
    expect(localAddress("::")).to.equal("[::1]");
    expect(localAddress("fd00::1")).to.equal("[fd00::1]");
    expect(routerUrl("198.18.0.11", 8000)).to.equal("http://198.18.0.11:8000");
    expect(routerUrl("fd00::1", 8000)).to.equal("http://[fd00::1]:8000");
  });

  it("the profile store stays inside the router's folder", () => {
    expect(profileStorePath({ profiles: { path: "runs/profiles.json" } })).to.equal("runs/profiles.json");
    expect(() => profileStorePath({ profiles: { path: "/etc/profiles.json" } })).to.throw('router: the fleet document\'s profiles.path "/etc/profiles.json" must be relative');
    expect(() => profileStorePath({ profiles: { path: "../x.json" } })).to.throw("must be relative and stay inside the router's folder");
  });
});

describe("router: proof", () => {
  const good: RouterProof = {
    health: { status: "ok", instances: 2, available_instances: 2 },
    models: ["tiny"],
    completion: { status: 200, requestId: "r1", text: "abc" },
    journal: { prefill_iid: "p0", decode_iid: "d0", terminal: "completed", crossed: true, output_len: 4 },
  };
  const expected = { engineCount: 2, model: "tiny", engineIds: ["p0", "d0"] };

  it("passes a router that served one request through a prefill and a decode engine", () => {
    expect(judgeRouterProof(good, expected)).to.deep.equal([]);
  });

  it("names each problem", () => {
    const bad: RouterProof = { health: { status: "degraded", instances: 1 }, models: [], completion: { status: 502, requestId: "r2", text: null }, journal: { prefill_iid: "p0", decode_iid: null, terminal: "failed" } };
    expect(judgeRouterProof(bad, expected)).to.deep.equal([
      '/health status is "degraded", expected "ok"',
      "/health reports 1 engines, the fleet has 2",
      '/v1/models lists [], not the served model "tiny"',
      "the completion through the router answered HTTP 502",
      'the journal row ends "failed", not "completed"',
      "no fleet engine served the decode leg (decode_iid null)",
    ]);
    expect(judgeRouterProof({ ...good, journal: null }, expected)).to.deep.equal(['the router\'s journal has no row for request "r1"']);
  });
});

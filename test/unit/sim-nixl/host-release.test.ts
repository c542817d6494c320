import { expect } from "chai";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { buildTopology } from "../../../sim/topology";
import { engineSimConfig } from "../../../sim/hosts/sim-config";
import { hostPaths, type HostPaths } from "../../../sim/hosts/paths";
import { PTH_NAME, SIM_PYTHON_DIR, writeSimPythonSite } from "../../../sim/hosts/python-site";
import { findNixlDistribution, NIXL_SEARCH_PATH } from "../../../sim/engine/nixl-runtime";
import { SimConfigSchema } from "../../../sim/engine/config";

const pythonVersion = spawnSync("/usr/bin/python3", ["-c", "import sys; print('%d.%d' % sys.version_info[:2])"], { encoding: "utf8" }).stdout.trim();

/**
 * The topology's `nixl` option: a host whose vLLM environment carries another NIXL release than sim/python's
 * 0.7.1. Both readers of that release must see it: the image check (Python's importlib.metadata, through the
 * host's .pth) and the engine simulator (its crash rule, through the host's sim config).
 */
describe("sim: a host that declares its own NIXL release", () => {
  const topology = buildTopology({ hosts: 17, nixl: { sim16: "1.5.0" }, topologyFile: null });
  const host = (alias: string) => topology.hosts.find((h) => h.alias === alias)!;

  it("gives the release to the named host only, and its sim config names the host's own site", () => {
    expect(host("sim16").nixl).to.equal("1.5.0");
    expect(host("sim17")).to.not.have.property("nixl");
    const config = SimConfigSchema.parse(engineSimConfig(host("sim16"), 0.05));
    expect(config.nixl.site).to.equal(hostPaths("sim16").pythonSite);
    expect(SimConfigSchema.parse(engineSimConfig(host("sim17"), 0.05)).nixl).to.not.have.property("site");
  });

  it("refuses a version that is no release, a docker host (its engines run the image) and a host outside the fleet", () => {
    expect(() => buildTopology({ hosts: 17, nixl: { sim16: "latest" }, topologyFile: null })).to.throw('nixl for sim16 ("latest"): give a NIXL release such as "1.5.0"');
    expect(() => buildTopology({ hosts: 3, dockerHosts: ["simdock"], nixl: { simdock: "1.5.0" }, topologyFile: null })).to.throw(/^nixl given for simdock: a docker host's engines run the simulator image/);
    expect(() => buildTopology({ hosts: 3, nixl: { sim16: "1.5.0" }, topologyFile: null })).to.throw("nixl given for sim16, but the fleet has hosts sim1..sim3; raise --hosts");
  });

  describe("on the host's disk", () => {
    let tmp = "";
    let p: HostPaths;
    beforeEach(() => {
      tmp = fs.mkdtempSync(path.join(os.tmpdir(), "sim-nixl-"));
      p = { rootHome: path.join(tmp, "root"), homeDir: path.join(tmp, "homes"), simConfig: path.join(tmp, "sim-config.json"), pythonSite: path.join(tmp, "python") } as HostPaths;
      fs.mkdirSync(p.rootHome);
      fs.writeFileSync(p.simConfig, JSON.stringify({ version: "0.29.0" }));
    });
    afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

    const pth = () => fs.readFileSync(path.join(p.rootHome, ".local", "lib", `python${pythonVersion}`, "site-packages", PTH_NAME), "utf8");
    /** What `importlib.metadata` finds for nixl with the host's .pth, as the image check reads it. */
    const importedVersion = () =>
      spawnSync("/usr/bin/python3", ["-c", "from importlib import metadata; print(metadata.version('nixl'))"], { encoding: "utf8", env: { PATH: "/usr/bin:/bin", HOME: p.rootHome } }).stdout.trim();

    it("puts the release ahead of sim/python for Python and for the engine, and takes it away again", () => {
      writeSimPythonSite(p, "1.5.0");
      expect(pth().split("\n").slice(0, 2)).to.deep.equal([p.pythonSite, SIM_PYTHON_DIR]);
      expect(importedVersion()).to.equal("1.5.0");
      expect(findNixlDistribution([p.pythonSite, ...NIXL_SEARCH_PATH])).to.include({ name: "nixl", version: "1.5.0" });

      // Another release replaces it: one NIXL distribution in the site, as pip leaves it.
      writeSimPythonSite(p, "1.6.2");
      expect(fs.readdirSync(p.pythonSite)).to.deep.equal(["nixl-1.6.2.dist-info"]);
      expect(importedVersion()).to.equal("1.6.2");

      writeSimPythonSite(p);
      expect(fs.existsSync(p.pythonSite)).to.equal(false);
      expect(pth().split("\n")[0]).to.equal(SIM_PYTHON_DIR);
      expect(importedVersion()).to.equal("0.7.1");
    });
  });
});

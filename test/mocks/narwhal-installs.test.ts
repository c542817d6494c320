/**
 * Gate B on every host under mocks: one install (and its evidence record) per host that runs Narwhal's
 * code, the router host's kept at the URN it had under the router's component, and each engine's
 * attestation sidecar run from its own host's install. No provider method runs here; the install script
 * itself runs in test/providers/router.test.ts and on simulated hosts in test/providers/narwhal-install.test.ts.
 */
import { expect } from "chai";
import { fleetConfig, mockSecrets, reveal, settle, useFleetMocks } from "./support/fleet";
import { installHosts } from "../../components/narwhal-installs";
import { parseFleetConfig } from "../../lib/config/parse";
import { sha256Json } from "../../lib/digest";

const STACK = "urn:pulumi:mock::narwhal-fleet::";
const FLEET_CHAIN = "narwhal:fleet:Fleet";
/** Where the router host's install and its record were before every engine host had one. */
const FORMER = `${STACK}${FLEET_CHAIN}$narwhal:router:RouterHost`;

describe("mocks: narwhal installs (Gate B on every host)", () => {
  const mocks = useFleetMocks();
  const registered = mocks.registered;

  it("installs once on each host, the router host included once, each with its install record", async () => {
    const fleet = mocks.build(fleetConfig({ runtime: { kind: "native" }, router: { host: "a" } }), mockSecrets("k"));
    await settle(fleet.attestation.contract);
    const installs = registered.filter((r) => r.type === "narwhal:router:NarwhalInstall");
    expect(installs.map((r) => r.name).sort()).to.deep.equal(["fleet-a-narwhal", "fleet-b-narwhal"]);
    const venvs = registered.filter((r) => r.type === "command:remote:Command" && r.name.endsWith("-narwhal-venv")).sort((x, y) => (x.name < y.name ? -1 : 1));
    expect(venvs.map((r) => [r.name, (reveal(r.inputs.connection) as { host: string }).host])).to.deep.equal([
      ["fleet-a-narwhal-venv", "198.18.0.11"],
      ["fleet-b-narwhal-venv", "198.18.0.12"],
    ]);
    // Each into the stack's folder on its own host, from the wheelhouse config applies to every host.
    expect(String(venvs[1].inputs.create)).to.include("folder='/var/lib/narwhal-fleet/mock/narwhal/narwhal-inference-0.7.0'").and.include("narwhal install on host b:");
    const records = registered.filter((r) => r.type === "pulumi-nodejs:dynamic/narwhal:CommandRecord" && r.inputs.kind === "install").sort((x, y) => (x.name < y.name ? -1 : 1));
    expect(records.map((r) => [r.name, r.inputs.hostAlias])).to.deep.equal([
      ["fleet-a-narwhal-record", "a"],
      ["fleet-b-narwhal-record", "b"],
    ]);
    // The router runs from the router host's install: no second one on it.
    expect(fleet.routerHostResources.install).to.equal(fleet.narwhalInstalls.get("a"));
  });

  it("keeps the router host's install and record at the URNs they had under the router's component", async () => {
    const fleet = mocks.build(fleetConfig({ runtime: { kind: "native" }, router: { host: "b" } }), mockSecrets("k"));
    await settle(fleet.attestation.contract);
    const aliasesOf = (name: string) => registered.find((r) => r.name === name)!.aliases;
    expect(aliasesOf("fleet-b-narwhal")).to.deep.equal([`${FORMER}$narwhal:router:NarwhalInstall::fleet-router-host-narwhal`]);
    expect(aliasesOf("fleet-b-narwhal-record")).to.deep.equal([`${FORMER}$pulumi-nodejs:dynamic/narwhal:CommandRecord::fleet-router-host-narwhal-record`]);
    expect(aliasesOf("fleet-a-narwhal")).to.deep.equal([]);
    expect(aliasesOf("fleet-a-narwhal-record")).to.deep.equal([]);
  });

  it("runs each sidecar from its host's install, restarted with a new install, and only after it", async () => {
    const fleet = mocks.build(fleetConfig({ runtime: { kind: "native" } }), mockSecrets("k"));
    await settle(fleet.attestation.contract);
    const e2 = registered.find((r) => r.name === "fleet-attestation-e2-sidecar")!.inputs;
    const bin = "/var/lib/narwhal-fleet/mock/narwhal/narwhal-inference-0.7.0/venv/bin";
    expect(String(e2.create)).to.include(`'${bin}/narwhal-attest' '--document'`);
    const venv = registered.find((r) => r.name === "fleet-b-narwhal-venv")!.inputs;
    // The install's start key: a new revision, folder or wheel source is a new install, and a new sidecar.
    expect((e2.triggers as unknown[]).slice(2)).to.deep.equal([`${bin}/narwhal-attest`, sha256Json(venv.triggers)]);
  });

  it("installs on the router host only when the operator provides the sidecar command", () => {
    const spec = (attestation: Record<string, unknown>) => parseFleetConfig(fleetConfig({ router: { host: "b" }, attestation }));
    expect(installHosts(spec({}), "b")).to.deep.equal(["a", "b"]);
    expect(installHosts(spec({ command: "/opt/narwhal/bin/narwhal-attest" }), "b")).to.deep.equal(["b"]);
  });
});

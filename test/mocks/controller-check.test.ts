/**
 * The router's one-controller check under mocks (lib/router/controller-check.ts runs it; the router
 * provider tests run it against real narwhal-serve processes): one remote command per fleet host, on that
 * host's login, naming every engine of the fleet and this stack's router folder on that host, with no
 * secret in the open; the router's process waits for all of them.
 */
import { expect } from "chai";
import { PROFILED, fleetConfig, mockSecrets, reveal, settle, useFleetMocks } from "./support/fleet";

const API_KEY = "mock-api-key-controller-0123";
const SSH_KEY = "mock-ssh-key-controller-4567";
const SECRET_SIG = "4dabf18193072939515e22adb298388d";

/** The inputs with every secret (in its wire form) replaced by a marker: what state holds in the open. */
function withoutSecrets(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutSecrets);
  if (v && typeof v === "object") {
    const o = v as Record<string, unknown>;
    if (o[SECRET_SIG] === "1b47061264138c4ac30d75fd1eb44270") return "[secret]";
    return Object.fromEntries(Object.entries(o).map(([k, x]) => [k, withoutSecrets(x)]));
  }
  return v;
}

describe("mocks: the router's one-controller check", () => {
  const mocks = useFleetMocks();
  const urnOf = (name: string) => new RegExp(`::${name.replace(/[-]/g, "\\-")}$`);

  it("checks every fleet host for another router serving this fleet's engines before the router starts", async function () {
    this.timeout(30000);
    const fleet = mocks.build(fleetConfig(PROFILED), mockSecrets(API_KEY, SSH_KEY));
    const router = fleet.routerHostResources.router;
    expect(router.controllerChecks).to.have.length(2);
    const creates = await Promise.all(router.controllerChecks.map((c) => settle<string>(c.create as never)));
    await settle(router.process.urn);

    const checks = mocks.registered.filter((r) => r.type === "command:remote:Command" && r.name.includes("-controller-check-"));
    expect(checks.map((r) => r.name).sort()).to.deep.equal(["fleet-router-host-router-controller-check-a", "fleet-router-host-router-controller-check-b"]);
    const byHost = { a: { host: "198.18.0.11", port: 22, user: "root", engines: "e1:8100 e3:8102" }, b: { host: "198.18.0.12", port: 2222, user: "ops", engines: "e2:8101" } };
    for (const [alias, h] of Object.entries(byHost)) {
      const check = checks.find((r) => r.name.endsWith(`-check-${alias}`))!;
      const create = String(reveal(check.inputs.create));
      expect(creates).to.include(create);
      // On that host's own login, its key a secret.
      const conn = reveal(check.inputs.connection) as Record<string, unknown>;
      expect(conn).to.deep.include({ host: h.host, port: h.port, user: h.user });
      expect(reveal(conn.privateKey)).to.equal(SSH_KEY);
      // Every engine of the fleet, the ports of this host's own, every fleet host's address, this stack's router folder.
      expect(create).to.include("engines='198.18.0.11:8100 198.18.0.12:8101 198.18.0.11:8102'");
      expect(create).to.include(`local_engines='${h.engines}'`);
      expect(create).to.include("fleet_addrs='198.18.0.11 198.18.0.12'");
      expect(create).to.include("ours='/var/lib/narwhal-fleet/mock/router'");
      // Nothing secret outside a secret: neither the engines' API key nor the login's key.
      const open = JSON.stringify(withoutSecrets(check.inputs));
      expect(open).to.not.include(API_KEY).and.not.include(SSH_KEY);
      expect(String(reveal(check.inputs.create))).to.not.include(API_KEY).and.not.include(SSH_KEY);
      expect(check.inputs.stdin).to.equal(undefined);
    }

    // The router process starts only after every host's check passed.
    const process = mocks.registered.find((r) => r.type === "command:remote:Command" && r.name === "fleet-router-host-router-process")!;
    for (const check of checks) expect(process.dependencies!.some((u) => urnOf(check.name).test(u)), check.name).to.equal(true);
  });
});

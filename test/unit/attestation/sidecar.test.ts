/** Where a sidecar listens and what it runs; its scripts run for real in test/providers/attestation.test.ts. */
import { expect } from "chai";
import { sidecarArgv, sidecarEndpoint, sidecarStartScript } from "../../../lib/attestation/sidecar";

describe("attestation sidecar", () => {
  it("listens on the engine's fabric address at its attestationPort, IPv6 included", () => {
    expect(sidecarEndpoint("http://198.18.0.11:8100", 8200)).to.deep.equal({
      bindHost: "198.18.0.11",
      port: 8200,
      url: "http://198.18.0.11:8200/v1/attestation",
      healthUrl: "http://198.18.0.11:8200/health",
    });
    expect(sidecarEndpoint("http://[fd00::5]:8101", 8201)).to.deep.include({ bindHost: "fd00::5", url: "http://[fd00::5]:8201/v1/attestation" });
    expect(() => sidecarEndpoint("https://h:8100/v1", 8200)).to.throw('engine URL "https://h:8100/v1" is not http://<address>:<port>');
    expect(() => sidecarEndpoint("http://h:8100", 0)).to.throw("attestationPort 0 is not a TCP port");
  });

  it("names the engine's process or container, and no credential", () => {
    const base = {
      engineId: "e1",
      command: "narwhal-attest",
      runDir: "/var/lib/narwhal-fleet/dev/attestation/e1",
      document: '{"schema":"narwhal.attestation"}',
      documentDigest: "sha256:" + "0d".repeat(32),
      engineUrl: "http://198.18.0.11:8100",
      endpoint: sidecarEndpoint("http://198.18.0.11:8100", 8200),
      startTimeoutS: 60,
      stopTimeoutS: 30,
    };
    expect(sidecarArgv({ ...base, owner: { hostAlias: "a", pid: 4242 } })).to.deep.equal([
      "narwhal-attest", "--document", "/var/lib/narwhal-fleet/dev/attestation/e1/engine-attestation.json",
      "--engine-base", "http://198.18.0.11:8100", "--engine-pid", "@ENGINE_PID@", "--host", "198.18.0.11", "--port", "8200",
    ]);
    expect(sidecarArgv({ ...base, owner: { hostAlias: "a", containerId: "ab".repeat(32) } })).to.include("--engine-container").and.include("ab".repeat(32));
    const script = sidecarStartScript({ ...base, owner: { hostAlias: "a", pid: 4242 } });
    expect(script).to.not.match(/API_KEY|Bearer/);
    expect(script).to.include("umask 077").and.include("within attestation.startTimeoutS 60s");
    // The sidecar watches whoever serves the engine's port now (an engine restarted by hand has a new
    // pid), and the launcher's pid only when the host cannot say.
    expect(script).to.include(`ss -Hltnp '( sport = :8100 )'`).and.include("engine_pid=4242").and.include(`'--engine-pid' "$engine_pid"`);
  });
});

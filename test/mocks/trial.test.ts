/** Gate G's capacity trial as the Fleet registers it: one LoadTrial per configured point, in order. */
import { expect } from "chai";
import * as pulumi from "@pulumi/pulumi";
import { PROFILED, fleetConfig, mockSecrets, reveal, settle, useFleetMocks } from "./support/fleet";

const API_KEY = "mock-api-key-0123456789";
const SSH_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nbW9jay10cmlhbC1rZXk=\n-----END OPENSSH PRIVATE KEY-----\n";

describe("mocks: capacity trial", () => {
  const mocks = useFleetMocks();
  const registered = mocks.registered;

  it("registers one capacity trial point per trial.points entry, its logins' keys only inside secrets", async () => {
    const points = [
      { id: "low", rate: 1, requests: 10, mix: [{ promptTokens: 256, outputTokens: 16 }] },
      { id: "high", rate: 3, requests: 30, mix: [{ promptTokens: 1024, outputTokens: 16 }] },
    ];
    const fleet = mocks.build(fleetConfig({ ...PROFILED, trial: { points } }), mockSecrets(API_KEY, SSH_KEY));
    await settle(pulumi.all(fleet.trialPoints.map((t) => t.urn)));
    const trials = registered.filter((r) => r.type === "pulumi-nodejs:dynamic/narwhal:LoadTrial");
    expect(trials.map((t) => t.name)).to.deep.equal(["fleet-trial-low", "fleet-trial-high"]);
    const high = trials[1].inputs;
    expect(high.point).to.deep.include({ id: "high", rate: 3, requests: 30, arrival: "poisson", seed: 0 });
    expect(high).to.deep.include({ routerHost: "b", prometheus: "127.0.0.1:9090", requestTimeoutS: 120, drainTimeoutS: 120 });
    for (const t of trials) expect(JSON.stringify(t.inputs, (_k, v) => (reveal(v) !== v ? "[secret]" : v)), t.name).to.not.include(SSH_KEY.split("\n")[1]);
    expect(reveal(high.hostPrivateKeys)).to.deep.equal({ a: SSH_KEY, b: SSH_KEY });
  });

  it("registers no trial point unless one is configured", async () => {
    const fleet = mocks.build(fleetConfig(PROFILED), mockSecrets(API_KEY, SSH_KEY));
    await settle(fleet.engines);
    expect(fleet.trialPoints).to.deep.equal([]);
    expect(registered.filter((r) => r.type === "pulumi-nodejs:dynamic/narwhal:LoadTrial")).to.deep.equal([]);
  });
});

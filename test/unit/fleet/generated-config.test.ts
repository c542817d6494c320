/**
 * The runbook's Gate A config the program writes: deployment.env names each engine's sidecar where the
 * fleet document does, on the engine's host (IPv6 bracketed) and its attestationPort, and an engine's
 * GPUs as its plan resolved them.
 */
import { expect } from "chai";
import { parseFleetConfig } from "../../../lib/config";
import { generatedConfig, type GeneratedHost } from "../../../lib/fleet/generated-config";
import { engineLaunchPlan } from "../../../lib/launch/policy";

const spec = parseFleetConfig({
  hosts: [
    { alias: "a", destination: "root@198.18.0.11", fabricInterface: "fab0" },
    { alias: "b", destination: "root@gpu-b.corp.example", fabricInterface: "fab0" },
  ],
  engines: [
    { id: "e1", host: "a", gpuIds: [0] },
    { id: "e2", host: "b", role: "decode", attestationPort: 9300 },
  ],
  model: { servedName: "tiny-llama", checkpointDir: "/models/tiny-llama" },
  slo: { ttftS: 4, tpotS: 0.2 },
});
const address: Record<string, string> = { a: "198.18.0.11", b: "fd00::12" };
const hosts: GeneratedHost[] = spec.hosts.map((h) => ({
  alias: h.alias,
  login: { alias: h.alias, host: address[h.alias], port: 22, user: "root", connectTimeoutS: 10 },
  hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB",
  fabricAddress: address[h.alias],
  discovery: { relativePath: `discovery/${h.alias}.json`, digest: `sha256:${"a".repeat(64)}` },
  policyDigest: `sha256:${"b".repeat(64)}`,
}));
// e1 names GPU 0 of its host's two; e2 names none and takes both of its host's.
const plans = spec.engines.map((e) =>
  engineLaunchPlan(spec, e, { fabricAddress: address[e.host], accelerators: { vendor: "nvidia", product: "GPU X", gpus: [{ index: 0 }, { index: 1 }] }, model: { dtype: "bfloat16", maxPositionEmbeddings: 4096 } }),
);

describe("generated runbook config", () => {
  it("names each engine's sidecar on the engine's host and its attestationPort", () => {
    const env = generatedConfig(spec, "a", hosts, plans, {})["deployment.env"];
    const lines = env.split("\n").filter((l) => /^NARWHAL_NODE_\d+_(URL|ATTESTATION_URL)=/.test(l));
    expect(lines).to.deep.equal([
      "NARWHAL_NODE_1_URL='http://198.18.0.11:8100'",
      "NARWHAL_NODE_1_ATTESTATION_URL='http://198.18.0.11:8200/v1/attestation'",
      "NARWHAL_NODE_2_URL='http://[fd00::12]:8101'",
      "NARWHAL_NODE_2_ATTESTATION_URL='http://[fd00::12]:9300/v1/attestation'",
    ]);
  });

  it("names an engine's GPUs from its plan where the config names them, and leaves them unset where it takes every GPU of its host", () => {
    const env = generatedConfig(spec, "a", hosts, plans, {})["deployment.env"];
    expect(plans.map((p) => p.placement.gpuIds)).to.deep.equal([[0], [0, 1]]);
    expect(env.split("\n").filter((l) => /_GPU_IDS=/.test(l))).to.deep.equal(["NARWHAL_NODE_1_GPU_IDS='0'"]);
  });
});

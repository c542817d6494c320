/**
 * The runbook's Gate A config the program writes: deployment.env names each engine's sidecar where the
 * fleet document does, on the engine's host (IPv6 bracketed) and its attestationPort.
 */
import { expect } from "chai";
import { parseFleetConfig } from "../../../lib/config";
import { generatedConfig, type GeneratedHost } from "../../../lib/fleet/generated-config";
import type { LaunchRecord } from "../../../lib/launch/plan";

const spec = parseFleetConfig({
  hosts: [
    { alias: "a", destination: "root@198.18.0.11", fabricInterface: "fab0" },
    { alias: "b", destination: "root@gpu-b.corp.example", fabricInterface: "fab0" },
  ],
  engines: [
    { id: "e1", host: "a", gpuIds: [0] },
    { id: "e2", host: "b", gpuIds: [0], role: "decode", attestationPort: 9300 },
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
const plans: LaunchRecord[] = spec.engines.map((e) => {
  const a = address[e.host];
  return { engineId: e.id, argv: ["vllm", "serve"], env: {}, url: `http://${a.includes(":") ? `[${a}]` : a}:${e.port}`, tensorParallelSize: 1, maxModelLen: 4096, planSha256: `sha256:${"c".repeat(64)}` };
});

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
});

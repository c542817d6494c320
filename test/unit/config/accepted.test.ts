/**
 * Configs the rules must let through (the other half of every rule), and the values the parser
 * derives from more than one key.
 */
import { expect } from "chai";
import { DIGEST, accepted, ed25519Line, minimal, variant } from "./fixtures";

describe("config: accepted configs", () => {
  it("accepts disjoint GPUs on one host, with distinct default ports", () => {
    const spec = accepted(
      variant((c) => {
        c.engines[0].gpuIds = [0, 1];
        c.engines.push({ id: "e2", host: "a", gpuIds: [2, 3] });
      }),
    );
    const shared = spec.engines.filter((e) => e.host === "a");
    expect(shared.map((e) => [e.id, e.gpuIds, e.port, e.attestationPort, e.nixlPort])).to.deep.equal([
      ["e0", [0, 1], 8100, 8200, 5600],
      ["e2", [2, 3], 8102, 8202, 5602],
    ]);
  });

  it("lets engines on one host share the fleet-wide UCX port range (a pool, not a fixed port)", () => {
    // The dev stack's shape: two engines on one host, neither with its own transferPortRange.
    accepted(
      variant((c) => {
        c.engines[0].gpuIds = [0];
        c.engines.push({ id: "e2", host: "a", gpuIds: [1] });
      }),
    );
  });

  it("accepts explicit roles with one prefill and one decode, and pins that do not starve a pool", () => {
    const spec = accepted(
      variant((c) => {
        c.engines[0] = { id: "e0", host: "a", role: "decode", pin: true };
        c.engines[1] = { id: "e1", host: "b", role: "prefill", pin: true };
      }),
    );
    expect(spec.engines.map((e) => [e.role, e.pin])).to.deep.equal([
      ["decode", true],
      ["prefill", true],
    ]);
  });

  it("accepts TP that divides the GPU list, and a replica TP shape that matches", () => {
    accepted(
      variant((c) => {
        c.launch = { tensorParallelSize: 2 };
        c.engines[0].gpuIds = [0, 1, 2, 3];
        c.engines[1].gpuIds = [4, 5, 6, 7];
      }),
    );
  });

  it("resolves the login user: explicit, from the destination, else root", () => {
    const spec = accepted(
      variant((c) => {
        c.hosts[0].destination = "ubuntu@gpu-a.example";
        c.hosts[1].user = "admin";
        c.hosts.push({ alias: "c", destination: "gpu-c", fabricInterface: "eth1" });
      }),
    );
    expect(spec.hosts.map((h) => h.user)).to.deep.equal(["ubuntu", "admin", "root"]);
  });

  it("uses fabric.interface for hosts that do not name one", () => {
    const spec = accepted(
      variant((c) => {
        delete c.hosts[0].fabricInterface;
        c.fabric = { interface: "fab0" };
      }),
    );
    expect(spec.hosts.map((h) => h.fabricInterface)).to.deep.equal(["fab0", "eth1"]);
  });

  it("pins host keys without their comment when first contact is off", () => {
    const spec = accepted(
      variant((c) => {
        c.ssh = { allowFirstContact: false };
        c.hosts[0].hostKey = `${ed25519Line(1)} root@gpu-a`;
        c.hosts[1].hostKey = ed25519Line(2);
      }),
    );
    expect(spec.hosts.map((h) => h.hostKey)).to.deep.equal([ed25519Line(1), ed25519Line(2)]);
  });

  it("accepts jump chains through fleet hosts and to outside destinations", () => {
    const spec = accepted(
      variant((c) => {
        c.hosts[0].jump = "b";
        c.hosts[1].jump = "ops@bastion.example:2222";
        c.hosts.push({ alias: "c", destination: "10.0.0.3", fabricInterface: "eth1", jump: "admin@[fd00::1]:22" });
      }),
    );
    expect(spec.hosts.map((h) => h.jump)).to.deep.equal(["b", "ops@bastion.example:2222", "admin@[fd00::1]:22"]);
  });

  it("accepts a container runtime with a registry digest or an image ID", () => {
    const byDigest = accepted(variant((c) => (c.runtime = { kind: "docker-cli", image: `vllm/vllm-openai@${DIGEST}` })));
    expect(byDigest.runtime.image).to.equal(`vllm/vllm-openai@${DIGEST}`);
    accepted(variant((c) => (c.runtime = { kind: "docker", image: DIGEST })));
  });

  it("accepts ucx_rdma with HCAs and devices, fleet-wide or per engine", () => {
    const rdma = { hcas: ["mlx5_0:1"], devices: ["/dev/infiniband/uverbs0"], gidIndex: 3 };
    const spec = accepted(variant((c) => (c.launch = { transport: "ucx_rdma", rdma })));
    expect(spec.launch.rdma).to.deep.equal(rdma);
    accepted(variant((c) => (c.engines[1].overrides = { transport: "ucx_rdma", rdma: { hcas: ["mlx5_1:1"] } })));
  });

  it("keeps engine overrides as given, for the launch plan to merge over launch", () => {
    const overrides = {
      dtype: "float16",
      maxNumSeqs: 16,
      engineArgs: ["--max-num-batched-tokens", "8192"],
      engineEnv: { VLLM_LOGGING_LEVEL: "DEBUG" },
      slo: { ttftS: 4 },
    };
    const spec = accepted(variant((c) => (c.engines[1].overrides = overrides)));
    expect(spec.engines[1].overrides).to.deep.equal(overrides);
  });

  it("ignores config keys the program passes as undefined (unset in the stack)", () => {
    accepted({ ...minimal(), slo: undefined, router: undefined, profiling: undefined });
  });

  it("parses the dev stack's simulated fleet (Pulumi.dev.yaml)", () => {
    const hosts = ["sim1", "sim2", "sim3"].map((alias, i) => ({
      alias,
      destination: `root@198.18.0.1${i + 1}`,
      fabricInterface: "fab0",
    }));
    const engines = [
      { id: "e1", host: "sim1", gpuIds: [0] },
      { id: "e2", host: "sim2", gpuIds: [0] },
      { id: "e3", host: "sim3", gpuIds: [0] },
      { id: "e4", host: "sim1", gpuIds: [1] },
    ];
    const model = { servedName: "tiny-llama", checkpointDir: "/models/tiny-llama" };
    const spec = accepted({ hosts, engines, model, runtime: { kind: "native" } });
    expect(spec.engines.map((e) => `${e.id}:${e.role}`)).to.deep.equal(["e1:prefill", "e2:decode", "e3:decode", "e4:decode"]);
  });
});

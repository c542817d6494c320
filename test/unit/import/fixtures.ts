/** A runbook deployment's private files, as an operator following Gate A has them. */

export const IMAGE = `registry.example.com/narwhal/vllm@sha256:${"ab".repeat(32)}`;
export const NODE1_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBqGp7n6N1g0jS4oTb8pQ7cz3w2m8dU8Yj0XQ8WkZ1aH";
export const SECRETS = { apiKey: "s3cret-engine-key", node1: "node1-pa$$word", router: "router pass #1" };

/** Every runbook field, per-node overrides, a jump-host alias (gpu-b), passwords, and fields the program does not carry. */
export const RUNBOOK_ENV = `# Private deployment environment (Gate A). Never commit.
set +x
NARWHAL_DEPLOYMENT_REVISION=4f1c2d9e
NARWHAL_ENGINE_IMAGE=${IMAGE}
NARWHAL_ENGINE_MODEL_NAME=qwen3-8b
NARWHAL_MODEL_DIR=/srv/models/qwen3-8b/
NARWHAL_RUN_DIR=/srv/narwhal/runs
NARWHAL_FABRIC_INTERFACE=ens5f0
NARWHAL_ENGINE_PORT=8100
NARWHAL_ATTEST_PORT=8010
NARWHAL_NIXL_SIDE_CHANNEL_PORT=5600
NARWHAL_UCX_TCP_PORT_RANGE=6300-6500
export NARWHAL_ENGINE_API_KEY='${SECRETS.apiKey}'
NARWHAL_TENSOR_PARALLEL_SIZE=2
NARWHAL_MODEL_DTYPE=bfloat16
NARWHAL_BLOCK_SIZE=64
NARWHAL_ENGINE_ENV='{"VLLM_LOGGING_LEVEL":"INFO"}'
NARWHAL_TTFT_S=8
NARWHAL_TPOT_S=0.1
NARWHAL_SSH_KNOWN_HOSTS=ssh.known_hosts
NARWHAL_ROUTER_SSH=ops@10.20.0.4
NARWHAL_ROUTER_SSH_PASSWORD="${SECRETS.router}"

NARWHAL_NODE_1_SSH=ubuntu@10.20.0.11
NARWHAL_NODE_1_SSH_PASSWORD='${SECRETS.node1}'
NARWHAL_NODE_1_IP=192.168.50.11
NARWHAL_NODE_1_GPU_IDS=0,1
# gpu-b is an ssh_config alias reached through the bastion (ProxyJump)
NARWHAL_NODE_2_SSH=gpu-b
NARWHAL_NODE_2_URL=http://10.30.0.12:8100
NARWHAL_NODE_2_ATTESTATION_URL=http://10.30.0.12:8010/v1/attestation
NARWHAL_NODE_2_GPU_IDS=0,1
NARWHAL_NODE_3_SSH=gpu-b
NARWHAL_NODE_3_GPU_IDS=2,3
NARWHAL_NODE_3_ENGINE_PORT=8101
NARWHAL_NODE_3_ATTEST_PORT=8011
NARWHAL_NODE_3_NIXL_SIDE_CHANNEL_PORT=5601
NARWHAL_NODE_3_MODEL_DTYPE=float16
NARWHAL_NODE_3_TTFT_S=6

MODEL_REPO_ID=Qwen/Qwen3-8B
MODEL_REVISION=0123456789abcdef0123456789abcdef01234567
HF_TOKEN=hf_not_for_this_program
`;

export const KNOWN_HOSTS = `10.20.0.11 ${NODE1_KEY} root@gpu-a
|1|hashedsalt=|hashedhost= ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHashedOnlyHashedOnlyHashedOnlyHashed00
`;

/** The fleet document the runbook's discovery wrote, with ids, roles, a pin, recalibrated limits and deadlines. */
export function runbookFleet(): Record<string, any> {
  return {
    schema: "narwhal.fleet",
    schema_version: 2,
    _note: "written by discover_deployment.py",
    model: "qwen3-8b",
    hardware: { accelerator: "NVIDIA H100 80GB HBM3", accelerators_per_engine: 2, tensor_parallel: 2 },
    engines: [
      { iid: "p0", url: "${NARWHAL_NODE_1_URL}", attestation_url: "${NARWHAL_NODE_1_ATTESTATION_URL}", role: "prefill", pin: true },
      { iid: "d0", url: "${NARWHAL_NODE_2_URL}", attestation_url: "${NARWHAL_NODE_2_ATTESTATION_URL}", role: "decode" },
      { iid: "d1", url: "${NARWHAL_NODE_3_URL}", attestation_url: "${NARWHAL_NODE_3_ATTESTATION_URL}", role: "decode" },
    ],
    slo: { ttft_s: 4.5, tpot_s: 0.08 },
    serving: { request_timeout_s: 300, prefill_timeout_s: 60, max_connections: 256 },
    engine: { first_token_timeout_s: 3.5, health_timeout_s: 4, first_token_calibration_path: "runs/calibration/first-token.json" },
    controller: { min_prefill: 1, min_decode: 1 },
    profiles: { path: "runs/profiles.json" },
  };
}

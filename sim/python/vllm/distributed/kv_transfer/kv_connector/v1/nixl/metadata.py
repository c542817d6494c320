"""The NIXL connector's protocol version, where vLLM 0.29.0 declares it (simulated vllm, see narwhal_sim_python.py).

vLLM bumps it on any incompatible change to NixlAgentMetadata, kv_transfer_params, the wire format or the
block layout, and takes it as the factor nixl_connector_version of the NIXL compatibility hash. History in
0.29.0: from 1 (compatibility checking) to 9 (block_strides). The engine simulator hashes the same value
(sim/engine/nixl-compat.ts).
"""

NIXL_CONNECTOR_VERSION: int = 9

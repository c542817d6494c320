"""KVTransferConfig with vLLM's fields, defaults and checks (as sim/engine/kv-transfer-config.ts models them)."""
import uuid
from dataclasses import dataclass, field
from typing import Any, Optional

KV_ROLES = ["kv_producer", "kv_consumer", "kv_both"]
FAILURE_POLICIES = ["recompute", "fail"]


@dataclass
class KVTransferConfig:
    kv_connector: Optional[str] = None
    engine_id: Optional[str] = None
    kv_buffer_device: str = "cuda"
    kv_buffer_size: float = 1e9
    kv_role: Optional[str] = None
    kv_rank: Optional[int] = None
    kv_parallel_size: int = 1
    kv_ip: str = "127.0.0.1"
    kv_port: int = 14579
    kv_connector_extra_config: dict[str, Any] = field(default_factory=dict)
    kv_connector_module_path: Optional[str] = None
    enable_permute_local_kv: bool = False
    kv_load_failure_policy: str = "fail"

    def __post_init__(self):
        if self.engine_id is None:
            self.engine_id = str(uuid.uuid4())
        if self.kv_connector is not None and self.kv_role is None:
            raise ValueError("Please specify kv_role when kv_connector is set, supported roles are %s" % KV_ROLES)
        if self.kv_role is not None and self.kv_role not in KV_ROLES:
            raise ValueError("Unsupported kv_role: %s. Supported roles are %s" % (self.kv_role, KV_ROLES))
        if self.kv_load_failure_policy not in FAILURE_POLICIES:
            raise ValueError("Unsupported kv_load_failure_policy: %s. Supported policies are %s" % (self.kv_load_failure_policy, FAILURE_POLICIES))

"""KVConnectorFactory: connector names to classes. The simulator models NixlConnector only."""
import importlib


class KVConnectorFactory:
    _registry = {
        "NixlConnector": ("vllm.distributed.kv_transfer.kv_connector.v1.nixl_connector", "NixlConnector"),
    }

    @classmethod
    def get_connector_class(cls, kv_transfer_config):
        name = kv_transfer_config.kv_connector
        if name in cls._registry:
            module, attribute = cls._registry[name]
            return getattr(importlib.import_module(module), attribute)
        if kv_transfer_config.kv_connector_module_path:
            return getattr(importlib.import_module(kv_transfer_config.kv_connector_module_path), name)
        raise ValueError("Unsupported connector type: %s" % name)

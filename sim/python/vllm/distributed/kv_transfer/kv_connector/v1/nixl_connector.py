"""The connector class KVConnectorFactory resolves; the transfer itself is sim/engine/nixl.ts."""


class NixlConnector:
    pass

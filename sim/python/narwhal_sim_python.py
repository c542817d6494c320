"""The Python side of vLLM on a simulated host.

A real native vLLM is a Python environment: `vllm` the console script, and the `vllm` package (plus
transformers and NIXL) that a runtime check imports. On a simulated host `vllm` is a shim that runs the
engine simulator (sim/engine), and this folder is the package side: the small part of vllm's and
transformers' modules the runtime check imports, answering from the same sim config and the same model
rules as the simulator, so the check and a started engine agree.

The host harness (sim/hosts/python-site.ts) installs it with a .pth file in the login's user site:
the folder on sys.path, then `install(<the host's sim-config.json>)`. `install` makes
importlib.metadata report the simulated distributions, vllm at the version the sim config names (the
one `vllm --version` and /version report, also after a test edits the file). NIXL is an ordinary
distribution in this folder (nixl-<version>.dist-info), found on sys.path as pip leaves one, and vLLM's
NIXL_CONNECTOR_VERSION sits in its 0.29.0 file (vllm/distributed/kv_transfer/kv_connector/v1/nixl/metadata.py).
"""

import json
import os
import re
import sys
from importlib.metadata import Distribution, DistributionFinder
from pathlib import Path

# sim/engine/config.ts's default version, used when no sim config is named.
DEFAULT_VLLM_VERSION = "0.29.0"
# The other simulated distribution: transformers as the simulated checkpoint's generation_config names it.
FIXED_VERSIONS = {"transformers": "4.57.1"}

_config_path = None


def install(config_path):
    """Names the host's sim config and registers the simulated distributions (once per interpreter)."""
    global _config_path
    _config_path = config_path
    if not any(isinstance(finder, _SimulatedDistributions) for finder in sys.meta_path):
        sys.meta_path.append(_SimulatedDistributions())


def vllm_version():
    """The version the engine simulator reports: the sim config's `version`, else the default."""
    path = _config_path or os.environ.get("NARWHAL_SIM_CONFIG")
    if not path:
        return DEFAULT_VLLM_VERSION
    with open(path, encoding="utf-8") as handle:
        return json.load(handle).get("version") or DEFAULT_VLLM_VERSION


def _normalize(name):
    return re.sub(r"[-_.]+", "-", name).lower()


class _Distribution(Distribution):
    def __init__(self, name, version):
        self._name = name
        self._version = version

    def read_text(self, filename):
        if filename == "METADATA":
            return "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (self._name, self._version)
        return None

    def locate_file(self, path):
        return Path(__file__).parent / path


class _SimulatedDistributions(DistributionFinder):
    def find_spec(self, fullname, path=None, target=None):
        return None

    def find_distributions(self, context=DistributionFinder.Context()):
        versions = dict(FIXED_VERSIONS, vllm=None)
        for name in sorted(versions):
            if context.name is not None and _normalize(context.name) != _normalize(name):
                continue
            yield _Distribution(name, versions[name] or vllm_version())

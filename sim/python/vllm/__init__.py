"""Simulated vllm package (see narwhal_sim_python.py): only what the runtime check imports."""
from vllm.version import __version__

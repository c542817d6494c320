"""vLLM 0.29's NIXL connector package (simulated, see narwhal_sim_python.py): only metadata.py is here.

The real package's __init__ imports torch, zmq and msgspec; the runtime check reads metadata.py's source
instead of importing it, so nothing imports this package.
"""

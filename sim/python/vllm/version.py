from narwhal_sim_python import vllm_version

__version__ = vllm_version()

"""The convolutional SSM state layout, from VLLM_SSM_CONV_STATE_LAYOUT (default SD, as in vLLM 0.29)."""
import os

LAYOUTS = ["SD", "DS"]


def get_conv_state_layout():
    layout = os.environ.get("VLLM_SSM_CONV_STATE_LAYOUT", "SD")
    if layout not in LAYOUTS:
        raise ValueError("VLLM_SSM_CONV_STATE_LAYOUT=%s is not one of %s" % (layout, LAYOUTS))
    return layout

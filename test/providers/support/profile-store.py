"""A profile store for the router tests, written by narwhal-inference's own ProfileStore.

Gate F's sweep is not what these tests exercise: each engine gets the simulator's ground-truth
coefficients (sim/engine/config.ts, before its time scale) bound to the generation narwhal's own
read_generation measures on the live engine, which is what narwhal-serve re-matches on start.
usage: profile-store.py <fleet.json> <out.json> <time scale>   (engine API key in the env the fleet names)
"""
import asyncio
import sys
from pathlib import Path

from narwhal.config.loading import load
from narwhal.profiling.generation import read_generation
from narwhal.profiling.model import Profile
from narwhal.profiling.store import ProfileStore


async def main() -> None:
    cfg = load(sys.argv[1])
    store = ProfileStore(Path(sys.argv[2]), load=False)
    scale = float(sys.argv[3])
    for spec in cfg.engines:
        generation = await read_generation(cfg, spec)
        store.put(
            Profile(
                iid=spec.iid,
                ttft_a=2e-8 * scale,
                ttft_b=6e-5 * scale,
                ttft_c=0.005 * scale,
                tpot_slope=3e-6 * scale,
                tpot_request_slope=0.002 * scale,
                tpot_intercept=0.012 * scale,
                # The measured domain a sweep of 1..8 streams over up to 4096 resident tokens leaves.
                decode_min_requests=1,
                decode_max_requests=8,
                decode_min_kv_tokens=64,
                decode_max_kv_tokens=4096,
                decode_fit_mape=0.0,
                decode_cv_mape=0.0,
                prefill_min_tokens=64,
                prefill_max_tokens=2048,
                generation_digest=generation.digest,
            )
        )


asyncio.run(main())

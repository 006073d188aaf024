"""Cost of one GAMP iteration against the cost of reading the tokens once (memory-bandwidth limit).

Run: ``PYTHONPATH=. python benchmarks/amp_scaling.py [--sizes 1000:1 2000:4 ...] [--dtype float32] [--json out.json]``.
For each ``D:alpha`` (spiked ``nu = 2``, ``L = 3``, ``Delta = 0.1``): seconds per GAMP iteration
(a fixed number of iterations, compilation excluded), seconds to stream the token array once
(``sum(X)``, jitted) in the same process, their ratio (each iteration reads the tokens twice,
``X W`` and ``X^T g``: the floor is about 2), and the time of a whole run to its fixed point.
Optionally (``--gibbs D``) the exact Gibbs sampler's time (4 chains, 300 + 300 sweeps) against
AMP's time to its fixed point on the same data.
"""

from __future__ import annotations

import argparse
import json
import time

import jax
import jax.numpy as jnp

import bayes_slr  # noqa: F401  (float64)
from bayes_slr.inference import amp
from bayes_slr.inference.samplers import run_gibbs
from bayes_slr.jax_setup import enable_compilation_cache
from bayes_slr.models.simulate import draw_teacher, simulate
from bayes_slr.models.spec import LengthLaw, SLRConfig

CONFIG = SLRConfig("spiked", 2, LengthLaw.fixed(3), 2.0, 0.1)
ITERATIONS = 10
REPEATS = 3


def best_time(fn) -> float:
    """Shortest of ``REPEATS`` timed calls after one warm-up call."""
    jax.block_until_ready(fn())
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        jax.block_until_ready(fn())
        times.append(time.perf_counter() - start)
    return min(times)


def measure(D: int, alpha: float, dtype: str) -> dict:
    """Per-iteration and streaming times at one size."""
    config = CONFIG.replace(D=D)
    N = round(alpha * D)
    key_teacher, key_data, key_start = jax.random.split(jax.random.PRNGKey(0), 3)
    teacher = draw_teacher(key_teacher, D, exact=True)
    data = amp.amp_data(key_data, config, teacher, N, dtype=dtype)
    per_iteration = best_time(lambda: amp.run_amp(key_start, data, config, teacher=teacher, max_iter=ITERATIONS,
                                                  tol=1e-300, adaptive=False)) / ITERATIONS
    total = jax.jit(jnp.sum)
    stream = best_time(lambda: total(data.X))
    start = time.perf_counter()
    result = jax.block_until_ready(amp.run_amp(key_start, data, config, teacher=teacher))
    full = time.perf_counter() - start
    return {"D": D, "alpha": alpha, "N": N, "dtype": dtype, "NLD": N * config.Lbar * D,
            "token_bytes": data.X.nbytes, "iteration_s": per_iteration, "stream_s": stream,
            "iteration_over_stream": per_iteration / stream, "run_s": full, "run_iterations": int(result.state.iteration),
            "converged": bool(result.converged)}


def gibbs_race(D: int, alpha: float) -> dict:
    """AMP to its fixed point against Gibbs (4 chains, 300 + 300 sweeps) on one data set."""
    config = CONFIG.replace(D=D)
    key_teacher, key_data, key_start, key_gibbs = jax.random.split(jax.random.PRNGKey(1), 4)
    teacher = draw_teacher(key_teacher, D, exact=True)
    batch = simulate(key_data, config, teacher, round(alpha * D))
    data = amp.AMPData(batch.X, batch.y, batch.mask)
    amp_s = best_time(lambda: amp.run_amp(key_start, data, config, teacher=teacher))
    gibbs_s = best_time(lambda: run_gibbs(key_gibbs, config, batch, chains=4, warmup=300, samples=300).k)
    return {"D": D, "alpha": alpha, "amp_s": amp_s, "gibbs_s": gibbs_s, "gibbs_over_amp": gibbs_s / amp_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", nargs="+", default=["500:4", "1000:4", "2000:4", "4000:4"], help="D:alpha pairs")
    parser.add_argument("--dtype", choices=amp.DTYPES, default="float64")
    parser.add_argument("--gibbs", type=int, help="also race Gibbs at this D (alpha = 2)")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    enable_compilation_cache()
    rows = []
    for size in args.sizes:
        D, alpha = size.split(":")
        rows.append(measure(int(D), float(alpha), args.dtype))
        print(json.dumps(rows[-1]), flush=True)
    figures = {"config": CONFIG.to_dict(), "device": jax.devices()[0].platform, "rows": rows}
    if args.gibbs:
        figures["gibbs"] = gibbs_race(args.gibbs, 2.0)
        print(json.dumps(figures["gibbs"]), flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(figures, handle, indent=1)


if __name__ == "__main__":
    main()

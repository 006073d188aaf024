"""Cost of one GAMP iteration against reading the tokens once, and AMP against the exact Gibbs
sampler.

Run: ``PYTHONPATH=. python benchmarks/amp_scaling.py [--sizes 1000:4 2000:4 ...] [--dtype float32]
[--variant max --nu inf] [--gibbs D] [--json out.json]``.

For each ``D:alpha`` (spiked ``nu = 2``, ``L = 3``, ``Delta = 0.1`` by default): seconds per GAMP
iteration
(runs of 10 and 30 iterations, their difference over 20: compilation and the start's fixed cost
excluded), of the output denoiser alone, and of streaming
the token array once (``sum(X)``, jitted), all timed in turn in the same process (the best of
``REPEATS`` rounds each: the machine is shared); their ratio (each iteration reads the tokens twice,
``X W`` and ``X^T g``: the floor is about 2); and the time of a whole run to its fixed point.

``--gibbs D`` races AMP against the exact Gibbs sampler on the same data (alpha 2): AMP's time to
its
fixed point (compiled) against the time Gibbs (4 chains, warm-up = the first half of the sweeps; the
time of ``t`` sweeps is the fixed cost plus ``t`` times the cost of a sweep, both from compiled runs
of
20 and 40 sweeps) needs until the test error of its posterior mean of ``f`` is within one standard
error of AMP's (the same
test sequences; the paired difference and its standard error).
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import time
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

import bayes_slr  # noqa: F401  (float64)
from bayes_slr.inference import amp
from bayes_slr.inference.predictive import posterior_mean_predictor, thin_draws
from bayes_slr.inference.samplers import run_gibbs
from bayes_slr.jax_setup import enable_compilation_cache
from bayes_slr.models.scoring import excess_error_given_teacher
from bayes_slr.models.simulate import draw_teacher, simulate, streamed_mean
from bayes_slr.models.spec import LengthLaw, SLRConfig

CONFIG = SLRConfig("spiked", 2, LengthLaw.fixed(3), 2.0, 0.1)
ITERATIONS = 10
REPEATS = 5
GIBBS_SWEEPS = (20, 40, 80, 160, 320, 640)
"""Numbers of Gibbs sweeps at which the posterior mean is scored (draws: the second half of each).
"""
GIBBS_DRAWS = 200
"""Draws (thinned) behind each posterior mean of ``f``."""
N_TEST = 20_000


def best_times(functions: dict[str, Callable[[], object]]) -> dict[str, float]:
    """Shortest of ``REPEATS`` timed calls of each function, after one warm-up call; the functions
    are
    timed in turn in each round, so that a change of the machine's load hits all of them alike."""
    for fn in functions.values():
        jax.block_until_ready(fn())
    best = dict.fromkeys(functions, math.inf)
    for _ in range(REPEATS):
        for name, fn in functions.items():
            start = time.perf_counter()
            jax.block_until_ready(fn())
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def measure(config: SLRConfig, alpha: float, dtype: str) -> dict:
    """Per-iteration, denoiser and streaming times at one size, and one whole run."""
    D = config.D
    N = round(alpha * D)
    key_teacher, key_data, key_start = jax.random.split(jax.random.PRNGKey(0), 3)
    teacher = draw_teacher(key_teacher, D, exact=True)
    data = amp.amp_data(key_data, config, teacher, N, dtype=dtype)
    state = amp.amp_init(key_start, data, config)
    fields = 0.3 * jax.random.normal(key_start, state.g.shape, dtype=data.X.dtype)
    denoise = jax.jit(
        jax.vmap(
            lambda omega, y, mask, C: amp.output_denoiser(config, omega, y, mask, C),
            in_axes=(0, 0, 0, None),
        )
    )
    total = jax.jit(jnp.sum)

    def iterate(steps: int) -> jax.Array:
        return amp.run_amp(
            key_start, data, config, teacher=teacher, max_iter=steps, tol=1e-300, adaptive=False
        ).state.W

    times = best_times(
        {
            "short": lambda: iterate(ITERATIONS),
            "long": lambda: iterate(3 * ITERATIONS),
            "denoiser": lambda: denoise(fields, data.y, data.mask, state.C),
            "stream": lambda: total(data.X),
        }
    )
    per_iteration = (times["long"] - times["short"]) / (
        2 * ITERATIONS
    )  # the start's fixed cost cancels
    start = time.perf_counter()
    result = jax.block_until_ready(amp.run_amp(key_start, data, config, teacher=teacher))
    full = time.perf_counter() - start
    return {
        "variant": config.variant,
        "nu": config.nu,
        "D": D,
        "alpha": alpha,
        "N": N,
        "dtype": dtype,
        "NLD": N * config.Lbar * D,
        "token_bytes": data.X.nbytes,
        "iteration_s": per_iteration,
        "denoiser_s": times["denoiser"],
        "stream_s": times["stream"],
        "iteration_over_stream": per_iteration / times["stream"],
        "denoiser_over_stream": times["denoiser"] / times["stream"],
        "run_s": full,
        "run_iterations": int(result.state.iteration),
        "converged": bool(result.converged),
    }


def gibbs_race(D: int, alpha: float, seed: int) -> dict:
    """AMP to its fixed point against the exact Gibbs sampler on one data set (spiked
    ``CONFIG``).
    """
    config = CONFIG.replace(D=D)
    key_teacher, key_data, key_start, key_gibbs, key_test = jax.random.split(
        jax.random.PRNGKey(100 + seed), 5
    )
    teacher = draw_teacher(key_teacher, D, exact=True)
    batch = simulate(key_data, config, teacher, round(alpha * D))
    data = amp.AMPData(batch.X, batch.y, batch.mask)
    amp_s = best_times(
        {"amp": lambda: amp.run_amp(key_start, data, config, teacher=teacher).state.W}
    )["amp"]
    result = amp.run_amp(key_start, data, config, teacher=teacher)
    amp_f = amp.amp_predictor(
        config, result.state, own_tilt=False
    )  # the training-set posterior mean of f
    short = GIBBS_SWEEPS[0]
    warm = best_times(
        {
            sweeps: functools.partial(
                lambda sweeps: (
                    run_gibbs(key_gibbs, config, batch, chains=4, warmup=0, samples=sweeps).k
                ),
                sweeps,
            )
            for sweeps in (short, 2 * short)
        }
    )
    per_sweep = (warm[2 * short] - warm[short]) / short
    overhead = max(warm[short] - short * per_sweep, 0.0)  # starts, compiled-call dispatch
    longest = GIBBS_SWEEPS[-1]
    start = time.perf_counter()
    draws = run_gibbs(key_gibbs, config, batch, chains=4, warmup=0, samples=longest)
    k, v = np.asarray(draws.k), np.asarray(draws.v)
    long_run_s = time.perf_counter() - start
    means = [
        (
            thin_draws(k[:, sweeps // 2 : sweeps], GIBBS_DRAWS),
            thin_draws(v[:, sweeps // 2 : sweeps], GIBBS_DRAWS),
        )
        for sweeps in GIBBS_SWEEPS
    ]

    def differences(test) -> jax.Array:
        amp_error = excess_error_given_teacher(config, teacher, test, amp_f(test.X, test.lengths))
        gibbs = [
            excess_error_given_teacher(
                config,
                teacher,
                test,
                posterior_mean_predictor(config, kd, vd, test.X, test.lengths),
            )
            for kd, vd in means
        ]
        return jnp.stack([amp_error] + [error - amp_error for error in gibbs], axis=1)

    scored = streamed_mean(differences, key_test, config, teacher, N_TEST)
    steps = [
        {
            "sweeps": sweeps,
            "seconds": overhead + sweeps * per_sweep,
            "minus_amp": float(scored.mean[i + 1]),
            "stderr": float(scored.stderr[i + 1]),
        }
        for i, sweeps in enumerate(GIBBS_SWEEPS)
    ]
    reached = next((step for step in steps if step["minus_amp"] <= step["stderr"]), None)
    return {
        "D": D,
        "alpha": alpha,
        "seed": seed,
        "amp_s": amp_s,
        "amp_iterations": int(result.state.iteration),
        "amp_converged": bool(result.converged),
        "amp_error": float(scored.mean[0]),
        "amp_error_stderr": float(scored.stderr[0]),
        "gibbs_sweep_s": per_sweep,
        "gibbs_overhead_s": overhead,
        "gibbs_long_run_s": long_run_s,
        "gibbs": steps,
        "gibbs_reach_sweeps": reached and reached["sweeps"],
        "gibbs_reach_s": reached and reached["seconds"],
        "gibbs_over_amp": reached and reached["seconds"] / amp_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--sizes", nargs="+", default=["500:4", "1000:4", "2000:4", "4000:4"], help="D:alpha pairs"
    )
    parser.add_argument("--dtype", choices=amp.DTYPES, default="float64")
    parser.add_argument("--variant", choices=("spiked", "max"), default="spiked")
    parser.add_argument("--nu", type=float, default=2.0)
    parser.add_argument("--gibbs", type=int, help="also race Gibbs at this D (alpha = 2)")
    parser.add_argument("--teachers", type=int, default=2, help="teachers of the Gibbs race")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    enable_compilation_cache()
    config = SLRConfig(args.variant, 2, LengthLaw.fixed(3), args.nu, 0.1)
    rows = []
    for size in args.sizes:
        D, alpha = size.split(":")
        rows.append(measure(config.replace(D=int(D)), float(alpha), args.dtype))
        print(json.dumps(rows[-1]), flush=True)
    figures = {"config": config.to_dict(), "device": jax.devices()[0].platform, "rows": rows}
    if args.gibbs:
        figures["gibbs"] = []
        for seed in range(args.teachers):
            figures["gibbs"].append(gibbs_race(args.gibbs, 2.0, seed))
            print(json.dumps(figures["gibbs"][-1]), flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(figures, handle, indent=1)


if __name__ == "__main__":
    main()

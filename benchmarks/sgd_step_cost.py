"""Online SGD near its memory limit: one step against one read of its tokens, same process.

At ``D`` = 1000 and 2000 (spiked ``nu = 2``, ``L = 3``, softmax, the dynamics' default batch), each
timed after compilation, interleaved, best of ``--repeats``:

- **step**: one online-SGD step of :func:`~bayes_slr.attention.dynamics._advance` (draw a fresh
  batch, one gradient step), per step over a loop of ``--steps`` steps, with the fresh tokens drawn
  in float64 (the old path) and in :data:`~bayes_slr.attention.dynamics.SGD_TOKEN_DTYPE` (the new
  default);
- **read**: one read of the step's tokens, a sum over a stored array of the batch's shape
  ``(B, L, D)`` (what a step cannot do with less), in a jitted loop of the same length (so the
  call's dispatch is shared as in the step's loop) over :data:`STORED` such arrays in turn (so
  they are read from memory, not from the cache of the previous read);
- **draw**: the token draw alone, ``B L D`` Gaussian numbers in float64 and in float32, in a loop
  of the same length.

It prints each time as a ratio to the read. With ``--seeds S`` it also checks that the cheaper
draw leaves the statistics alone: ``S`` seeds of the dynamics' default online SGD (softmax,
spiked ``nu = 2``, ``L = 3``, ``Delta = 0.1``, ``eta = 1``, ``t = 0..40``) at ``--seed-D``, run
with float64 and with float32 tokens (the same teachers, starts and test sets), and the mean
final test error and escape time of each with their standard errors across seeds. Run:
``.venv/bin/python benchmarks/sgd_step_cost.py [--seeds 8] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import time
from unittest import mock

import jax
import jax.numpy as jnp
import numpy as np

import bayes_slr  # noqa: F401  (float64)
from bayes_slr.attention import dynamics
from bayes_slr.models.simulate import draw_teacher
from bayes_slr.models.spec import LengthLaw, SLRConfig
from bayes_slr.records import package_versions
from bayes_slr.studies.dynamics import escape_time
from bayes_slr.studies.dynamics_data_methods import SGD
from bayes_slr.studies.dynamics_methods import DEFAULT_BATCH, DEFAULT_T_MAX

TASK = SLRConfig("spiked", 1000, LengthLaw.fixed(3), 2.0)
DTYPES = ("float64", dynamics.SGD_TOKEN_DTYPE)
STORED = 16
"""Stored batches the read loop cycles through."""


def _loop_of_draws(shape: tuple[int, ...], dtype: str, steps: int):
    """A jitted loop of ``steps`` token draws of ``shape`` (summed so none is optimised away)."""

    @jax.jit
    def draws(key: jax.Array) -> jax.Array:
        def body(i, total):
            return total + jax.random.normal(jax.random.fold_in(key, i), shape, dtype).sum()

        return jax.lax.fori_loop(0, steps, body, jnp.zeros((), dtype))

    return draws


def _loop_of_reads(stored: jax.Array, steps: int):
    """A jitted loop of ``steps`` sums, each over the next of the stored batches ``stored[i]``."""

    @jax.jit
    def reads(stored: jax.Array) -> jax.Array:
        def body(i, total):
            return total + jax.lax.dynamic_index_in_dim(stored, i % STORED, keepdims=False).sum()

        return jax.lax.fori_loop(0, steps, body, jnp.zeros((), stored.dtype))

    return reads


def step_costs(D: int, batch: int, steps: int, repeats: int) -> dict[str, float]:
    """Seconds per step: SGD steps (per token precision), one read, the token draws."""
    config = TASK.replace(D=D)
    teacher = draw_teacher(jax.random.PRNGKey(0), D, exact=True)
    params = dynamics.start_params(jax.random.PRNGKey(1), config, "random", teacher)
    shape = (batch, config.Lbar, D)

    def sgd(dtype: str):
        run = jax.jit(
            lambda p: (
                dynamics._advance(
                    p,
                    jnp.asarray(0),
                    jnp.asarray(steps),
                    (teacher, jax.random.PRNGKey(2)),
                    jnp.asarray(1.0 / D),
                    jnp.asarray(0.0),
                    jnp.ones(2),
                    activation="softmax",
                    method="sgd",
                    config=config,
                    batch=batch,
                    sphere=False,
                    token_dtype=dtype,
                )[0].k
            )
        )
        return lambda: run(params).block_until_ready()

    stored = jax.random.normal(jax.random.PRNGKey(3), (STORED, *shape))
    reads = _loop_of_reads(stored, steps)
    calls = {f"step ({dtype} tokens)": (sgd(dtype), steps) for dtype in DTYPES}
    calls["read"] = (lambda: reads(stored).block_until_ready(), steps)
    for dtype in DTYPES:
        draws = _loop_of_draws(shape, dtype, steps)
        calls[f"draw ({dtype})"] = (
            lambda draws=draws: draws(jax.random.PRNGKey(4)).block_until_ready(),
            steps,
        )
    for call, _ in calls.values():
        call()  # compile
    best = dict.fromkeys(calls, math.inf)
    for _ in range(repeats):  # interleaved: the same load for every entry
        for name, (call, count) in calls.items():
            start = time.perf_counter()
            call()
            best[name] = min(best[name], (time.perf_counter() - start) / count)
    print(f"D = {D}, B = {batch} ({batch * config.Lbar * D} token entries a step):", flush=True)
    for name, seconds in best.items():
        print(f"  {name:22s} {seconds * 1e6:9.1f} us  {seconds / best['read']:6.1f} x one read")
    return best


def seed_statistics(D: int, seeds: int, batch: int) -> dict[str, dict[str, float]]:
    """Mean final test error and escape time (with standard errors over seeds) of the default
    online SGD at ``D``, with the fresh tokens drawn in each of :data:`DTYPES`."""
    config = TASK.replace(D=D, Delta=0.1)
    eta = SGD.default_eta
    steps = round(DEFAULT_T_MAX * D / eta)
    out = {}
    for dtype in DTYPES:
        advance = functools.partial(dynamics._advance, token_dtype=dtype)
        finals, escapes = [], []
        with mock.patch.object(dynamics, "_advance", advance):
            for seed in range(seeds):
                run = dynamics.TrainingRun(
                    config, "softmax", "sgd", eta, steps, seed=seed, batch=batch
                )
                trajectory = dynamics.train_dynamics(run)
                finals.append(trajectory.points[-1].test_error)
                escape = escape_time(trajectory)
                escapes.append(math.nan if escape is None else escape)
        row = {}
        for name, values in (("final_error", finals), ("escape_time", escapes)):
            values = np.asarray(values)
            row[name] = float(np.mean(values))
            row[f"{name}_stderr"] = float(np.std(values, ddof=1) / math.sqrt(len(values)))
        out[dtype] = row
        print(
            f"seeds D = {D} ({seeds} seeds, {dtype} tokens): final error "
            f"{row['final_error']:.4f} +- {row['final_error_stderr']:.4f}, escape time "
            f"{row['escape_time']:.2f} +- {row['escape_time_stderr']:.2f}",
            flush=True,
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", type=int, nargs="+", default=[1000, 2000])
    parser.add_argument("--batch", type=int, default=DEFAULT_BATCH)
    parser.add_argument("--steps", type=int, default=200, help="steps per timed loop")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seeds", type=int, default=0, help="seeds of the statistics check")
    parser.add_argument("--seed-D", type=int, default=200, help="dimension of that check")
    parser.add_argument("--json", help="write the numbers to this file")
    args = parser.parse_args()
    costs = {D: step_costs(D, args.batch, args.steps, args.repeats) for D in args.dims}
    seeds = seed_statistics(args.seed_D, args.seeds, args.batch) if args.seeds > 1 else None
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(
                {
                    "seconds_per_step": {str(D): c for D, c in costs.items()},
                    "batch": args.batch,
                    "seed_statistics": seeds and {"D": args.seed_D, "seeds": args.seeds, **seeds},
                    "versions": package_versions(),
                    "devices": str(jax.devices()),
                },
                handle,
                indent=1,
            )


if __name__ == "__main__":
    main()

"""Online SGD near its memory limit: one step against one read of its tokens, same process.

At ``--dims`` (default ``D`` = 1000, 2000, 4000; spiked ``nu = 2``, ``L = 3``, softmax, the
dynamics' default batch), each timed after compilation, interleaved, best of ``--repeats``:

- **step**: one online-SGD step of :func:`~bayes_slr.attention.dynamics._advance` (draw a fresh
  batch, one gradient step), per step over a loop of ``--steps`` steps, for each way of drawing
  the fresh tokens (:data:`PATHS`): all ``B L D`` entries in float64 (the first path) or in
  float32, or through the span of the teacher and the student (``projected``, the default:
  ``4 B L`` coordinates and two float32 ``D``-vectors, exact in law up to that rounding);
- **read**: one read of the step's tokens, a sum over a stored array of the batch's shape
  ``(B, L, D)`` (what a full draw cannot do with less), in a jitted loop of the same length (so the
  call's dispatch is shared as in the step's loop) over :data:`STORED` such arrays in turn (so
  they are read from memory, not from the cache of the previous read);
- **draw**: the token draw alone, ``B L D`` Gaussian numbers in float64 and in float32, in a loop
  of the same length.

It prints each time as a ratio to the read. Then the largest ``D`` whose default (projected) steps
run ``10^6`` sequences in a minute at that batch: steps timed at ``D = 1000, 2000, 4000, ...`` until
one costs more than ``60 B / 10^6`` seconds, the ``D`` read linearly between the last two.

With ``--seeds S`` it also checks that the draws leave the statistics alone: ``S`` seeds of the
dynamics' default online SGD (softmax, spiked ``nu = 2``, ``L = 3``, ``Delta = 0.1``, ``eta = 1``,
``t = 0..40``) at ``--seed-D``, run with the full (float32) and the projected draw (the same
teachers, starts and test sets), and the mean final test error and escape time of each with their
standard errors across seeds. Run:
``.venv/bin/python benchmarks/sgd_step_cost.py [--seeds 8] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import json
import math
import time

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
PATHS = {
    "full, float64": ("full", "float64"),
    "full, float32": ("full", dynamics.SGD_TOKEN_DTYPE),
    "projected": ("projected", dynamics.SGD_TOKEN_DTYPE),
}
"""The ways a step draws its fresh tokens: ``(token_draws, token_dtype)`` of ``_advance``."""
DEFAULT_PATH = "projected"
STORED = 16
"""Stored batches the read loop cycles through."""
SEQUENCES_A_MINUTE = 10**6


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


def _loop_of_steps(D: int, batch: int, steps: int, path: str):
    """A call running ``steps`` online-SGD steps at ``D`` drawn the way ``path`` says."""
    config = TASK.replace(D=D)
    teacher = draw_teacher(jax.random.PRNGKey(0), D, exact=True)
    params = dynamics.start_params(jax.random.PRNGKey(1), config, "random", teacher)
    token_draws, token_dtype = PATHS[path]
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
                token_draws=token_draws,
                token_dtype=token_dtype,
            )[0].k
        )
    )
    return lambda: run(params).block_until_ready()


def _best_times(calls: dict, repeats: int, steps: int) -> dict[str, float]:
    """Seconds per step of each call (compiled first; interleaved, best of ``repeats``)."""
    for call in calls.values():
        call()  # compile
    best = dict.fromkeys(calls, math.inf)
    for _ in range(repeats):  # interleaved: the same load for every entry
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            best[name] = min(best[name], (time.perf_counter() - start) / steps)
    return best


def step_costs(D: int, batch: int, steps: int, repeats: int) -> dict[str, float]:
    """Seconds per step: SGD steps (per way of drawing), one read, the token draws."""
    shape = (batch, TASK.Lbar, D)
    stored = jax.random.normal(jax.random.PRNGKey(3), (STORED, *shape))
    reads = _loop_of_reads(stored, steps)
    calls = {f"step ({path})": _loop_of_steps(D, batch, steps, path) for path in PATHS}
    calls["read"] = lambda: reads(stored).block_until_ready()
    for dtype in ("float64", "float32"):
        draws = _loop_of_draws(shape, dtype, steps)
        calls[f"draw ({dtype})"] = lambda draws=draws: draws(
            jax.random.PRNGKey(4)
        ).block_until_ready()
    best = _best_times(calls, repeats, steps)
    print(f"D = {D}, B = {batch} ({batch * TASK.Lbar * D} token entries a step):", flush=True)
    for name, seconds in best.items():
        print(f"  {name:24s} {seconds * 1e6:9.1f} us  {seconds / best['read']:6.2f} x one read")
    return best


def largest_dimension(batch: int, steps: int, repeats: int) -> dict[str, object]:
    """The largest ``D`` whose default steps run :data:`SEQUENCES_A_MINUTE` sequences in a minute
    at ``batch`` (module docstring), with the steps' times it was read from."""
    budget = 60.0 * batch / SEQUENCES_A_MINUTE
    times: dict[int, float] = {}
    D = 1000
    while True:
        call = _loop_of_steps(D, batch, steps, DEFAULT_PATH)
        times[D] = _best_times({"step": call}, repeats, steps)["step"]
        print(f"  D = {D}: {times[D] * 1e6:.1f} us a step ({budget * 1e6:.0f} us allowed)")
        if times[D] > budget or D >= 2**22:
            break
        D *= 2
    within = [d for d in times if times[d] <= budget]
    if not within:
        print(f"even D = {min(times)} is over the budget", flush=True)
        return {"largest_D": None, "seconds_per_step": {str(d): t for d, t in times.items()}}
    low = max(within)
    high = 2 * low if 2 * low in times else low
    slope = (times[high] - times[low]) / max(high - low, 1)
    largest = low if slope <= 0 else low + (budget - times[low]) / slope
    print(
        f"largest D running {SEQUENCES_A_MINUTE:.0e} sequences a minute at B = {batch}: "
        f"about {largest:.0f}",
        flush=True,
    )
    return {"largest_D": largest, "seconds_per_step": {str(d): t for d, t in times.items()}}


def seed_statistics(D: int, seeds: int, batch: int) -> dict[str, dict[str, float]]:
    """Mean final test error and escape time (with standard errors over seeds) of the default
    online SGD at ``D``, with the fresh tokens drawn in full and projected."""
    config = TASK.replace(D=D, Delta=0.1)
    eta = SGD.default_eta
    steps = round(DEFAULT_T_MAX * D / eta)
    out = {}
    for token_draws in dynamics.TOKEN_DRAWS:
        finals, escapes = [], []
        for seed in range(seeds):
            run = dynamics.TrainingRun(
                config,
                "softmax",
                "sgd",
                eta,
                steps,
                seed=seed,
                batch=batch,
                token_draws=token_draws,
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
        out[token_draws] = row
        print(
            f"seeds D = {D} ({seeds} seeds, {token_draws} draws): final error "
            f"{row['final_error']:.4f} +- {row['final_error_stderr']:.4f}, escape time "
            f"{row['escape_time']:.3f} +- {row['escape_time_stderr']:.3f}",
            flush=True,
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", type=int, nargs="+", default=[1000, 2000, 4000])
    parser.add_argument("--batch", type=int, default=DEFAULT_BATCH)
    parser.add_argument("--steps", type=int, default=200, help="steps per timed loop")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seeds", type=int, default=0, help="seeds of the statistics check")
    parser.add_argument("--seed-D", type=int, default=200, help="dimension of that check")
    parser.add_argument("--json", help="write the numbers to this file")
    args = parser.parse_args()
    costs = {D: step_costs(D, args.batch, args.steps, args.repeats) for D in args.dims}
    largest = largest_dimension(args.batch, args.steps, args.repeats)
    seeds = seed_statistics(args.seed_D, args.seeds, args.batch) if args.seeds > 1 else None
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(
                {
                    "seconds_per_step": {str(D): c for D, c in costs.items()},
                    "batch": args.batch,
                    "largest_D_a_minute": largest,
                    "seed_statistics": seeds and {"D": args.seed_D, "seeds": args.seeds, **seeds},
                    "versions": package_versions(),
                    "devices": str(jax.devices()),
                },
                handle,
                indent=1,
            )


if __name__ == "__main__":
    main()

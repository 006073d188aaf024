"""Speed of the training-dynamics tools (issue 21 item 5): ODE trajectories, online SGD steps.

1. **ODE trajectory**: wall time of one :func:`~bayes_slr.formulas.flow.solve_flow` (to ``t = 60``,
   64 logged points) after a warm-up call that compiles, for closed-form terms (linear and the
   predecessor's ``erf_sphere`` on spiked SLR) and Monte Carlo terms (softmax; ``2^14`` and
   ``2^16`` draws), and the SGD ODE (variance term by Monte Carlo).
2. **Online SGD per sequence**: steps of :func:`~bayes_slr.attention.dynamics._advance` (draw a
   fresh batch, one gradient step) timed after compilation, per sequence, against two baselines
   in the same process: one read of the same number of tokens already in memory (the matrix
   product ``X @ [k, v]`` of a stored batch: what a training step cannot do with less) and the
   draw alone (the simulator making the batch). Each sequence is drawn and read once, so the
   ratio to the read says how far a step is from memory-bound.
3. **Largest D at 10^6 sequences a minute**: from the per-sequence cost at the best batch size,
   interpolated in ``log D``.

Timings on a shared machine are noisy: read the ratios (same process, interleaved), not the
absolute times. Run: ``.venv/bin/python benchmarks/dynamics_speed.py [--quick] [--json out.json]``.
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
from bayes_slr.attention.activations import register_activation, sphere_erf
from bayes_slr.formulas.flow import FlowRun, Overlaps, solve_flow
from bayes_slr.models.simulate import draw_teacher, simulate
from bayes_slr.models.spec import LengthLaw, SLRConfig
from bayes_slr.records import package_versions

SPIKED = SLRConfig("spiked", 100, LengthLaw.fixed(3), 2.0)


def best_of(repeats: int, call) -> float:
    """Smallest wall time of ``repeats`` calls (the least disturbed by other load)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return min(times)


def ode_times(repeats: int) -> dict[str, float]:
    erf_sphere = register_activation(sphere_erf(0.5)).name
    random_start = Overlaps.typical_start("random", 1000, SPIKED)
    runs = {
        "linear flow (closed form)": FlowRun(SPIKED, "linear", random_start, t_max=60.0),
        "erf_sphere flow on the sphere (closed form)": FlowRun(
            SPIKED,
            erf_sphere,
            Overlaps.typical_start("sphere", 1000, SPIKED),
            t_max=60.0,
            sphere=True,
        ),
        "softmax flow (Monte Carlo, 2^14 draws)": FlowRun(
            SPIKED, "softmax", random_start, t_max=60.0, mc_samples=2**14
        ),
        "softmax flow (Monte Carlo, 2^16 draws)": FlowRun(
            SPIKED, "softmax", random_start, t_max=60.0, mc_samples=2**16
        ),
        "softmax SGD ODE, eta/B = 1 (Monte Carlo, 2^14 draws)": FlowRun(
            SPIKED, "softmax", random_start, t_max=60.0, method="sgd", eta=1.0, mc_samples=2**14
        ),
    }
    out = {}
    for name, run in runs.items():
        solve_flow(run)  # compiles
        out[name] = best_of(repeats, lambda run=run: solve_flow(run))
        print(f"ODE  {name:55s} {out[name]:.3f} s", flush=True)
    return out


def sgd_costs(D: int, batch: int, sequences: int, repeats: int) -> dict[str, float]:
    """Seconds per sequence: an SGD step (draw + gradient), one read of stored tokens, the draw."""
    config = SPIKED.replace(D=D)
    teacher = draw_teacher(jax.random.PRNGKey(0), D, exact=True)
    params = dynamics.start_params(jax.random.PRNGKey(1), config, "random", teacher)
    steps = max(1, sequences // batch)
    advance = jax.jit(
        lambda p, end: (
            dynamics._advance(
                p,
                jnp.asarray(0),
                end,
                (teacher, jax.random.PRNGKey(2)),
                jnp.asarray(1.0 / D),
                jnp.asarray(0.0),
                jnp.ones(2),
                activation="softmax",
                method="sgd",
                config=config,
                batch=batch,
                sphere=False,
            )[0].k
        )
    )
    stored = simulate(jax.random.PRNGKey(3), config, teacher, steps * batch)
    read = jax.jit(lambda X, W: jnp.sum(X @ W))
    draw = jax.jit(lambda key: simulate(key, config, teacher, steps * batch).X.sum())
    W = jnp.stack([params.k, params.v], axis=1)
    for call in (
        lambda: advance(params, jnp.asarray(steps)).block_until_ready(),
        lambda: read(stored.X, W).block_until_ready(),
        lambda: draw(jax.random.PRNGKey(4)).block_until_ready(),
    ):
        call()  # compile
    n = steps * batch
    result = {}
    for _ in range(repeats):  # interleaved, best of each
        for name, call in (
            ("sgd", lambda: advance(params, jnp.asarray(steps)).block_until_ready()),
            ("read", lambda: read(stored.X, W).block_until_ready()),
            ("draw", lambda: draw(jax.random.PRNGKey(4)).block_until_ready()),
        ):
            start = time.perf_counter()
            call()
            result[name] = min(result.get(name, math.inf), (time.perf_counter() - start) / n)
    print(
        f"SGD  D={D:5d} B={batch:3d}: {result['sgd'] * 1e6:8.1f} us/sequence, "
        f"{result['sgd'] / result['read']:6.1f} x one read, "
        f"{result['sgd'] / result['draw']:5.2f} x the draw",
        flush=True,
    )
    return result


def largest_dimension(per_sequence: dict[int, float], budget: float = 60.0) -> float:
    """``D`` at which ``10^6`` sequences cost ``budget`` seconds (log-log interpolation)."""
    dims = np.array(sorted(per_sequence))
    minutes = np.array([per_sequence[D] * 1e6 for D in dims])
    if minutes[0] > budget:
        return float(dims[0] * budget / minutes[0])
    if minutes[-1] <= budget:
        return float(dims[-1] * budget / minutes[-1])
    return float(np.exp(np.interp(np.log(budget), np.log(minutes), np.log(dims))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer sizes and repeats")
    parser.add_argument("--json", help="write the numbers to this file")
    args = parser.parse_args()
    repeats = 2 if args.quick else 3
    dims = (100, 1000) if args.quick else (100, 500, 2000, 8000)
    batches = (1, 16) if args.quick else (1, 16, 64)
    odes = ode_times(repeats)
    costs = {
        D: {B: sgd_costs(D, B, max(256, 2_000_000 // (3 * D)), repeats) for B in batches}
        for D in dims
    }
    best = {D: min(c["sgd"] for c in costs[D].values()) for D in dims}
    largest = largest_dimension(best)
    print(f"largest D running 10^6 sequences in a minute (best batch): about {largest:.0f}")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(
                {
                    "ode_seconds": odes,
                    "sgd_seconds_per_sequence": {
                        str(D): {str(B): c for B, c in by_batch.items()}
                        for D, by_batch in costs.items()
                    },
                    "largest_D_1e6_sequences_per_minute": largest,
                    "versions": package_versions(),
                    "devices": str(jax.devices()),
                },
                handle,
                indent=1,
            )


if __name__ == "__main__":
    main()

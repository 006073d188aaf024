"""One L-BFGS solve, variable projection against the full objective, in one process.

Per point (``gap``'s ERM settings: ``D = 100``, ``alpha = 16``, ``Delta = 0.1``; the points of
``benchmarks/erm_speed.py``), one teacher and training set, and per ridge ``lam`` (``--lams``)
every start ``erm_study`` trains (``--starts`` random ones, :data:`RANDOM_INIT_SCALE`, and the
informed one) solved to ``|grad| <= 1e-6`` by the one trainer
(:func:`~bayes_slr.attention.training.train_jit`) twice: ``projected=False`` (L-BFGS over
``k, v, c``: the code before variable projection) and ``projected=True`` (over ``k, c``,
``v`` in closed form). Printed per point and ridge: the iterations and the objective's
evaluations (summed over the starts; counted in a second, traced-again run whose objectives
carry a ``jax.debug.callback``), the warm seconds (best of ``--repeats``, the two routes
alternating), the time of one evaluation (seconds / evaluations) and the largest objective
difference between the routes over the starts, with the stopping tolerance's bound on it
(``tol^2 N / lam``: both ends within ``tol^2 / (2 lam / N)`` of a minimum of curvature
``>= lam / N``); a start whose routes end in different minima shows a larger difference.

Run: ``.venv/bin/python benchmarks/erm_projection.py [--points readme max30linear ...]``.
"""

from __future__ import annotations

import argparse
import math
import time
from unittest import mock

import jax
import numpy as np

import bayes_slr  # noqa: F401  (float64)
from bayes_slr.attention import projection, training
from bayes_slr.attention.training import initial_params, train_jit
from bayes_slr.experiments.task import DEFAULT_D, DEFAULT_DELTA
from bayes_slr.models.simulate import draw_teacher, simulate
from bayes_slr.models.spec import LengthLaw, SLRConfig, training_size

TOL = 1e-6
POINTS = {
    "readme": ("spiked", 3, 2.0, "softmax"),
    "max3linear": ("max", 3, math.inf, "linear"),
    "spiked5erf": ("spiked", 5, 2.0, "erf"),
    "max10linear": ("max", 10, math.inf, "linear"),
    "spiked10softmax": ("spiked", 10, 2.0, "softmax"),
    "max30linear": ("max", 30, math.inf, "linear"),
    "spiked30softmax": ("spiked", 30, 2.0, "softmax"),
    "max100linear": ("max", 100, math.inf, "linear"),
    "spiked100softmax": ("spiked", 100, 2.0, "softmax"),
}
"""Name: (variant, L, nu, activation), as in ``benchmarks/erm_speed.py``."""


def problems(name: str, starts: int):
    """The point's training set, its starts (random ones, then informed) and activation."""
    variant, L, nu, activation = POINTS[name]
    config = SLRConfig(variant, DEFAULT_D, LengthLaw.fixed(L), nu, DEFAULT_DELTA)
    teacher = draw_teacher(jax.random.PRNGKey(0), config.D)
    batch = simulate(jax.random.PRNGKey(1), config, teacher, training_size(16.0, config.D))
    keys = jax.random.split(jax.random.PRNGKey(2), starts)
    firsts = [initial_params(key, config, "random", None) for key in keys]
    return batch, firsts + [initial_params(keys[0], config, "informed", teacher)], activation


def solve_all(batch, firsts, activation, lam, projected):
    """Every start solved: ``(values, iterations)``, blocking."""
    out = [
        train_jit(
            p,
            batch.X,
            batch.lengths,
            batch.y,
            activation=activation,
            optimizer="lbfgs",
            lam=lam,
            tol=TOL,
            max_iter=2000,
            projected=projected,
        )
        for p in firsts
    ]
    jax.block_until_ready(out)
    return np.array([float(o[1]) for o in out]), sum(int(o[3]) for o in out)


def counted_evaluations(batch, firsts, activation, lam, projected) -> int:
    """The objectives' evaluations of every start's solve (traced again with a callback)."""
    count = [0]

    def tick(*_):
        count[0] += 1

    def counting(function):
        def wrapped(*args, **kwargs):
            value = function(*args, **kwargs)
            jax.debug.callback(tick, value)
            return value

        return wrapped

    jax.clear_caches()
    with (
        mock.patch.object(training, "objective", counting(training.objective)),
        mock.patch.object(
            projection, "profiled_objective", counting(projection.profiled_objective)
        ),
    ):
        solve_all(batch, firsts, activation, lam, projected)
    jax.clear_caches()
    return count[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", nargs="+", choices=sorted(POINTS), default=sorted(POINTS))
    parser.add_argument("--lams", nargs="+", type=float, default=[1.0, 0.1])
    parser.add_argument("--starts", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    for name in args.points:
        batch, firsts, activation = problems(name, args.starts)
        N = batch.y.shape[0]
        for lam in args.lams:
            routes = {"full": False, "projected": True}
            seconds = {route: math.inf for route in routes}
            results = {
                route: solve_all(batch, firsts, activation, lam, p) for route, p in routes.items()
            }
            for _ in range(args.repeats):
                for route, projected in routes.items():
                    start = time.perf_counter()
                    solve_all(batch, firsts, activation, lam, projected)
                    seconds[route] = min(seconds[route], time.perf_counter() - start)
            evaluations = {
                route: counted_evaluations(batch, firsts, activation, lam, p)
                for route, p in routes.items()
            }
            difference = np.max(np.abs(results["full"][0] - results["projected"][0]))
            print(
                f"{name} lam={lam:g}: "
                + "; ".join(
                    f"{route} {results[route][1]} iterations, {evaluations[route]} evaluations, "
                    f"{seconds[route]:.2f} s ({1e3 * seconds[route] / evaluations[route]:.2f} ms "
                    "an evaluation)"
                    for route in routes
                )
                + f"; x{seconds['full'] / seconds['projected']:.2f}; objectives differ by at most "
                f"{difference:.2e} (bound {TOL**2 * N / lam:.1e}); lowest full "
                f"{results['full'][0].min():.6f} projected {results['projected'][0].min():.6f}",
                flush=True,
            )


if __name__ == "__main__":
    main()

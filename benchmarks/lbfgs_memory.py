"""L-BFGS iterations against its memory along one seed's validation path, in one process.

One training set of ``bayes-slr gap --alpha 16`` (``D = 100``, ``N = 1600``, ``Delta = 0.1``, the
first seed's teacher and data, one random start), walked down the ridge grid warm-started as
the validation path walks it (``100, 31.6, 10, ...``), for each memory size: iterations to
``|grad| <= 1e-6``, the objective reached and the seconds per ridge value (each memory size's
first value includes its compilation).

Run: ``.venv/bin/python benchmarks/lbfgs_memory.py --variant max --L 30 --activation linear
--memory 10 100 --down-to 0.316``.
"""

from __future__ import annotations

import argparse
import math
import time

import jax
import optax

import bayes_slr  # noqa: F401  (float64)
from bayes_slr.attention import optimizers, training
from bayes_slr.attention.erm_settings import DEFAULT_LAM_GRID
from bayes_slr.experiments.task import DEFAULT_D, DEFAULT_DELTA
from bayes_slr.models.simulate import draw_teacher, simulate
from bayes_slr.models.spec import LengthLaw, SLRConfig, training_size
from bayes_slr.studies.erm import seed_keys

GAP_NU = {"spiked": 2.0, "max": math.inf}


def walk(config: SLRConfig, activation: str, memory: int, down_to: float) -> list[tuple]:
    """``(lam, iterations, objective, seconds)`` along the path with ``memory`` past steps."""
    optimizers.LBFGS.transformation = lambda self, rule, D: optax.lbfgs(memory_size=memory)
    jax.clear_caches()  # the trainer is traced again with this memory
    keys = seed_keys(0, 0)
    teacher = draw_teacher(keys[0], config.D)
    batch = simulate(keys[1], config, teacher, training_size(16.0, config.D))
    params = training.initial_params(keys[2], config, "random", None)
    rows = []
    for lam in sorted(DEFAULT_LAM_GRID, reverse=True):
        if lam < down_to:
            break
        start = time.perf_counter()
        params, value, _, count = training.train_jit(
            params,
            batch.X,
            batch.lengths,
            batch.y,
            activation=activation,
            optimizer="lbfgs",
            lam=lam,
            tol=1e-6,
            max_iter=5000,
        )
        rows.append((lam, int(count), float(value), time.perf_counter() - start))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=sorted(GAP_NU), default="max")
    parser.add_argument("--L", type=int, default=30)
    parser.add_argument("--activation", default="linear")
    parser.add_argument("--memory", nargs="+", type=int, default=[10, 100])
    parser.add_argument("--down-to", type=float, default=0.316, help="smallest ridge walked")
    args = parser.parse_args()
    config = SLRConfig(
        args.variant, DEFAULT_D, LengthLaw.fixed(args.L), GAP_NU[args.variant], DEFAULT_DELTA
    )
    for memory in args.memory:
        for lam, count, value, seconds in walk(config, args.activation, memory, args.down_to):
            print(
                f"memory {memory:4d}  lam {lam:8.4g}: {count:5d} iterations, "
                f"objective {value:.12f}, {seconds:6.2f} s"
            )


if __name__ == "__main__":
    main()

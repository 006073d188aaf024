"""One evaluation of the ERM objective and its gradient, float64 against float32, in one process.

Per point (``gap``'s ERM settings, the points of ``benchmarks/erm_projection.py``: one teacher
and training set, the first random start, ``lam = 0.1``), the full objective and the profiled
one (variable projection) are each compiled with ``jax.value_and_grad`` at both precisions (the
float32 one on float32 tokens, labels, ridge and parameters: what L-BFGS's float32 draft
evaluates, ``bayes_slr/attention/optimizers.py``) and timed, best of ``--repeats`` calls, the
precisions taken in turns. Printed: the four times and the ratios float32 / float64.

Run: ``.venv/bin/python benchmarks/erm_draft_evaluation.py [--points readme max30linear ...]``.
"""

from __future__ import annotations

import argparse
import math
import time

import jax
import jax.numpy as jnp
from erm_projection import POINTS, problems  # this folder

from bayes_slr.attention import projection
from bayes_slr.attention.training import objective

LAM = 0.1


def evaluations(batch, start, activation, dtype) -> dict:
    """The compiled full and profiled ``value_and_grad`` at ``dtype`` and their arguments."""
    X, y, lam = batch.X.astype(dtype), batch.y.astype(dtype), jnp.asarray(LAM, dtype)
    params = jax.tree_util.tree_map(lambda leaf: leaf.astype(dtype), start)
    keys = projection.keys_of(params)
    return {
        "full": (
            jax.jit(
                jax.value_and_grad(lambda p: objective(p, X, batch.lengths, y, activation, lam))
            ),
            params,
        ),
        "profiled": (
            jax.jit(
                jax.value_and_grad(
                    lambda k: projection.profiled_objective(k, X, batch.lengths, y, activation, lam)
                )
            ),
            keys,
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", nargs="+", choices=sorted(POINTS), default=sorted(POINTS))
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    for name in args.points:
        batch, firsts, activation = problems(name, 1)
        routes = {
            dtype.__name__: evaluations(batch, firsts[0], activation, dtype)
            for dtype in (jnp.float64, jnp.float32)
        }
        best = {(d, r): math.inf for d in routes for r in routes[d]}
        for d in routes:
            for function, argument in routes[d].values():
                jax.block_until_ready(function(argument))
        for _ in range(args.repeats):
            for d, r in best:
                function, argument = routes[d][r]
                start = time.perf_counter()
                jax.block_until_ready(function(argument))
                best[d, r] = min(best[d, r], time.perf_counter() - start)
        print(
            f"{name}: "
            + "; ".join(
                f"{r} float64 {1e3 * best['float64', r]:.2f} ms, float32 "
                f"{1e3 * best['float32', r]:.2f} ms (x{ratio:.2f})"
                for r in ("full", "profiled")
                for ratio in [best["float32", r] / best["float64", r]]
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()

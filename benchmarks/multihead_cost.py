"""Cost of ``H`` heads against one head, in one process (docs/performance.md, "Multi-head cost").

For ``H = 1, 2, 4`` teacher heads (spiked, ``L = 3``, ``nu = 2``, ``rho = 1`` and ``0.5``) it
times

- ``bayes``: the population Bayes error by quadrature
  (:func:`~bayes_slr.formulas.multihead.multihead_bayes_error_exact`);
- ``aligned``: the population error of ``H`` aligned softmax heads by quadrature
  (:func:`~bayes_slr.formulas.population.population_error`);
- ``student_heads``: the same heads as ``H`` :class:`StudentHead` records
  (:func:`~bayes_slr.formulas.student_heads.student_heads_error`);
- ``aligned_mc``: the same heads by Monte Carlo
  (:func:`~bayes_slr.formulas.population_mc.population_error_mc`, ``--mc-samples``);
- ``erm``: ERM with ``H_s = H`` softmax heads
  (:func:`~bayes_slr.studies.multihead_erm.multihead_erm`) at ``--D``, ``--alpha``, ``--seeds``
  teachers of ``--starts`` starts, L-BFGS run for exactly ``--iterations`` iterations (tolerance
  0), so that every ``H`` does the same number of steps.

Each computation is first called once per ``H`` (``cold``: compilation included, in this
process's caches), then ``--repeats`` rounds time every ``H`` in turn (warm). The figure is
``time(H) / (H time(1))`` within a round (target: at most 1), reported as the median over the
rounds with its smallest and largest value; a warm time is the mean of as many calls in a row as
one head needs to take ``--least`` seconds (the quadratures take milliseconds).

Run: ``.venv/bin/python benchmarks/multihead_cost.py [--repeats 5] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from collections.abc import Callable

import bayes_slr  # noqa: F401  (float64)
from bayes_slr.formulas.multihead import multihead_bayes_error_exact
from bayes_slr.formulas.population import population_error
from bayes_slr.formulas.population_mc import population_error_mc
from bayes_slr.formulas.student_heads import student_heads_error
from bayes_slr.formulas.student_heads_records import StudentHead
from bayes_slr.models.spec import LengthLaw, SLRConfig
from bayes_slr.records import package_versions
from bayes_slr.studies.multihead_erm import multihead_erm

HEADS = (1, 2, 4)
OVERLAPS = (1.2, 1.44, 0.8, 0.64)
"""``(m_k, q_k, m_v, q_v)`` of every aligned head (on the overlap manifold, no residual)."""


def computations(args: argparse.Namespace) -> dict[str, Callable[[SLRConfig], object]]:
    """The timed computations, each a function of the task (``heads``, ``presence`` set)."""
    m_k, q_k, m_v, q_v = OVERLAPS

    def student(config: SLRConfig) -> object:
        heads = tuple(StudentHead(h, m_k, q_k, m_v, q_v) for h in range(config.heads))
        return student_heads_error("softmax", config, heads)

    def erm(config: SLRConfig) -> object:
        return multihead_erm(
            config,
            "softmax",
            config.heads,
            args.alpha,
            seeds=args.seeds,
            starts=args.starts,
            tol=1e-300,
            max_iter=args.iterations,
            N_test=args.test,
        )

    table: dict[str, Callable[[SLRConfig], object]] = {
        "bayes": multihead_bayes_error_exact,
        "aligned": lambda config: population_error("softmax", config, *OVERLAPS),
        "student_heads": student,
        "aligned_mc": lambda config: population_error_mc(
            "softmax", config, *OVERLAPS, samples=args.mc_samples
        ),
        "erm": erm,
    }
    return {name: table[name] for name in args.parts}


def seconds(call: Callable[[], object], calls: int = 1) -> float:
    """Mean wall time of ``calls`` calls in a row."""
    start = time.perf_counter()
    for _ in range(calls):
        call()
    return (time.perf_counter() - start) / calls


def measure(
    call: Callable[[SLRConfig], object],
    configs: dict[int, SLRConfig],
    repeats: int,
    least: float,
) -> dict:
    """Cold and warm times of ``call`` per ``H`` and the ratios ``time(H) / (H time(1))``; a warm
    time is the mean of as many calls as one head needs to take ``least`` seconds."""
    cold = {H: seconds(lambda H=H: call(configs[H])) for H in configs}
    calls = max(1, math.ceil(least / seconds(lambda: call(configs[1]))))
    rounds = [
        {H: seconds(lambda H=H: call(configs[H]), calls) for H in configs} for _ in range(repeats)
    ]
    ratios = {H: [warm[H] / (H * warm[1]) for warm in rounds] for H in configs if H != 1}
    return {
        "calls_per_timing": calls,
        "cold_seconds": cold,
        "warm_seconds_median": {H: statistics.median(r[H] for r in rounds) for H in configs},
        "cold_ratio": {H: cold[H] / (H * cold[1]) for H in configs if H != 1},
        "ratio_median": {H: statistics.median(values) for H, values in ratios.items()},
        "ratio_min": {H: min(values) for H, values in ratios.items()},
        "ratio_max": {H: max(values) for H, values in ratios.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="warm rounds (default 5)")
    parser.add_argument(
        "--least", type=float, default=0.5, help="seconds of one head per warm timing (0.5)"
    )
    parser.add_argument("--presence", type=float, nargs="+", default=[1.0, 0.5])
    parser.add_argument(
        "--parts",
        nargs="+",
        default=["bayes", "aligned", "student_heads", "aligned_mc", "erm"],
        choices=["bayes", "aligned", "student_heads", "aligned_mc", "erm"],
    )
    parser.add_argument("--mc-samples", type=int, default=40_000)
    parser.add_argument("--D", type=int, default=8, help="ERM dimension (default 8)")
    parser.add_argument("--alpha", type=float, default=32.0, help="ERM alpha (default 32)")
    parser.add_argument("--seeds", type=int, default=2, help="ERM teachers (default 2)")
    parser.add_argument("--starts", type=int, default=2, help="ERM starts per seed (default 2)")
    parser.add_argument("--iterations", type=int, default=30, help="L-BFGS iterations (30)")
    parser.add_argument("--test", type=int, default=4000, help="ERM test sequences per seed")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args()

    start = time.perf_counter()
    figures: dict[str, dict] = {}
    for rho in args.presence:
        configs = {
            H: SLRConfig("spiked", args.D, LengthLaw.fixed(3), 2.0, heads=H, presence=rho)
            for H in HEADS
        }
        for name, call in computations(args).items():
            row = measure(call, configs, args.repeats, args.least)
            figures[f"{name} rho={rho:g}"] = row
            print(
                f"{name:14s} rho={rho:<4g} warm median s "
                + ", ".join(f"H={H}: {s:.4g}" for H, s in row["warm_seconds_median"].items())
                + " | time(H)/(H time(1)) median [min, max] "
                + ", ".join(
                    f"H={H}: {row['ratio_median'][H]:.2f} [{row['ratio_min'][H]:.2f}, "
                    f"{row['ratio_max'][H]:.2f}]"
                    for H in row["ratio_median"]
                )
                + " | cold "
                + ", ".join(f"H={H}: {r:.2f}" for H, r in row["cold_ratio"].items()),
                flush=True,
            )
    total = time.perf_counter() - start
    print(f"total {total:.0f} s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(
                {"settings": vars(args), "figures": figures, "seconds": total}
                | {"versions": package_versions()},
                handle,
                indent=2,
            )


if __name__ == "__main__":
    main()

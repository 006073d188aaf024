"""Cost of one ERM point of ``bayes-slr gap`` (issue 12): the default against a baseline, in one
process.

A point is ``erm_study`` for one activation and task: ``--seeds`` teachers and
training sets at ``D = 100``, ``alpha = 16``, test error on 20 000 fresh samples per seed.

- baseline: what ``gap`` ran before issue 12: one random start, fixed ``lam = 1e-3``;
- default: ``--starts`` random starts plus the informed start, ``lam = "auto"`` (held-out
  validation along the regularisation path, then the refit from every start).

Points: the README example (spiked ``nu = 2``, ``L = 3``, softmax) and the slow point of the
issue (max-SLR ``nu = inf``, ``L = 30``, linear). Each configuration runs once to compile,
then is timed; the ratio default / baseline is printed with the largest L-BFGS iteration
count of the reported fits and the chosen ``lam``.

Run: ``.venv/bin/python benchmarks/erm_cost_per_point.py [--seeds 4] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import json
import math
import time

import bayes_slr  # noqa: F401  (float64)
from bayes_slr.attention.erm_settings import ERMSettings
from bayes_slr.models.spec import LengthLaw, SLRConfig
from bayes_slr.records import package_versions
from bayes_slr.studies.erm import DEFAULT_STARTS, erm_study

POINTS = {
    "readme spiked nu=2 L=3 softmax": (
        SLRConfig("spiked", 100, LengthLaw.fixed(3), 2.0),
        "softmax",
    ),
    "max nu=inf L=30 linear": (SLRConfig("max", 100, LengthLaw.fixed(30), math.inf), "linear"),
}


def timed(call):
    """``(result, seconds)`` of one call."""
    start = time.perf_counter()
    result = call()
    return result, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=4, help="teachers per point (default 4)")
    parser.add_argument(
        "--starts",
        type=int,
        default=DEFAULT_STARTS,
        help=f"random starts (default {DEFAULT_STARTS})",
    )
    parser.add_argument(
        "--alpha", type=float, default=16.0, help="samples per dimension (default 16)"
    )
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args()

    figures = {}
    for name, (config, activation) in POINTS.items():
        runs = {
            "baseline": lambda: erm_study(
                config,
                ERMSettings(
                    activation=activation,
                    alpha=args.alpha,
                    lam=1e-3,
                    seeds=args.seeds,
                    starts=1,
                    predict_population=False,
                ),
                0,
            ),
            "default": lambda: erm_study(
                config,
                ERMSettings(
                    activation=activation,
                    alpha=args.alpha,
                    lam="auto",
                    seeds=args.seeds,
                    starts=args.starts,
                    predict_population=False,
                ),
                0,
            ),
        }
        figures[name] = {}
        for label, run in runs.items():
            run()  # compile
            summary, seconds = timed(run)
            figures[name][label] = {
                "seconds": seconds,
                "test_error": summary.test_error,
                "stderr": summary.stderr,
                "zero_error": summary.zero_error,
                "lam": list(summary.lam),
                "iterations_max": max(r.iterations for r in summary.per_seed),
                "restarts_agree": summary.restarts_agree,
            }
            print(
                f"{name:32s} {label:8s} {seconds:7.1f} s  error {summary.test_error:.4f} +- "
                f"{summary.stderr:.4f} "
                f"(zero {summary.zero_error:.4f})  lam "
                f"{', '.join(f'{x:.3g}' for x in summary.lam)}  "
                f"iterations <= {figures[name][label]['iterations_max']}",
                flush=True,
            )
        ratio = figures[name]["default"]["seconds"] / figures[name]["baseline"]["seconds"]
        figures[name]["ratio_default_over_baseline"] = ratio
        print(f"{name:32s} ratio default / baseline: {ratio:.2f}", flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(
                {
                    "seeds": args.seeds,
                    "starts": args.starts,
                    "alpha": args.alpha,
                    "points": figures,
                    "versions": package_versions(),
                },
                handle,
                indent=2,
            )


if __name__ == "__main__":
    main()

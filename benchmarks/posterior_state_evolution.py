"""Finite-D posterior errors against the state evolution as D grows (issue 11 item 4).

Exact teachers, ``sampler="auto"`` from random starts, unbiased errors of the Bayes-optimal
(weighted) and plain predictors; the gap to the theory at each ``D`` and its fit
``a + b/D`` (``a`` = the residual at ``D -> inf``, with its standard error).

Run: ``.venv/bin/python benchmarks/posterior_state_evolution.py --variant spiked --alpha 1 --D 25 50
100
--teachers 16 [--json out.json]``.
"""

from __future__ import annotations

import argparse

import bayes_slr  # noqa: F401  (float64)
from bayes_slr.experiments.posterior_scaling import state_evolution_gap
from bayes_slr.jax_setup import enable_compilation_cache
from bayes_slr.models.spec import LengthLaw, SLRConfig
from bayes_slr.records import atomic_write, json_text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", default="spiked")
    parser.add_argument("--alpha", type=float, nargs="+", default=[1.0])
    parser.add_argument("--D", type=int, nargs="+", default=[25, 50, 100])
    parser.add_argument("--teachers", type=int, default=16)
    parser.add_argument("--L", type=int, default=3)
    parser.add_argument("--nu", type=float, default=2.0)
    parser.add_argument("--Delta", type=float, default=0.1)
    parser.add_argument("--json")
    args = parser.parse_args()
    enable_compilation_cache()
    config = SLRConfig(args.variant, args.D[0], LengthLaw.fixed(args.L), args.nu, args.Delta)
    results = []
    for alpha in args.alpha:
        result = state_evolution_gap(config, alpha, args.D, args.teachers)
        results.append(result)
        for row in result["rows"]:
            cells = "  ".join(
                f"{name} {row[name]['measured']:.4f} (theory {row[name]['theory']:.4f}, gap "
                f"{row[name]['gap']:+.4f} +- {row[name]['stderr']:.4f})"
                for name in ("bayes", "plain")
            )
            print(f"{args.variant} alpha {alpha:g} D {row['D']}: {cells}", flush=True)
        for name, fit in result["fit"].items():
            print(
                f"{args.variant} alpha {alpha:g} {name}: gap = {fit['intercept']:+.4f} +- "
                f"{fit['intercept_stderr']:.4f}"
                f" + ({fit['slope']:+.3f} +- {fit['slope_stderr']:.3f}) / D",
                flush=True,
            )
    if args.json:
        atomic_write(args.json, lambda tmp: tmp.write_text(json_text(results, indent=1)))


if __name__ == "__main__":
    main()

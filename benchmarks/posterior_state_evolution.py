"""Finite-D posterior errors against the state evolution as D grows.

Teachers (prior draws, or exact with ``--exact-teacher``), ``sampler="auto"`` from random starts,
unbiased errors of the Bayes-optimal (weighted) and plain predictors and, on the same test
sequences, the paired difference to each teacher's own known-direction (oracle) error; the gap
of each to its theory at each ``D`` (``bayes - oracle`` against the state evolution minus the
population Bayes error) and its fit ``a + b/D`` (``a`` = the residual at ``D -> inf``, with its
standard error). Every finished ``(alpha, D)`` is printed as it ends.

Run: ``.venv/bin/python benchmarks/posterior_state_evolution.py --variant spiked --alpha 2 4
--D 25 50 100 200 --teachers 8 [--json out.json]``.
"""

from __future__ import annotations

import argparse
import time

import bayes_slr  # noqa: F401  (float64)
from bayes_slr.jax_setup import enable_compilation_cache
from bayes_slr.models.spec import LengthLaw, SLRConfig
from bayes_slr.records import atomic_write, json_text
from bayes_slr.studies.posterior_scaling import ScalingSampling, state_evolution_gap


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", default="spiked")
    parser.add_argument("--alpha", type=float, nargs="+", default=[1.0])
    parser.add_argument("--D", type=int, nargs="+", default=[25, 50, 100])
    parser.add_argument("--teachers", type=int, default=16)
    parser.add_argument("--L", type=int, default=3)
    parser.add_argument("--nu", type=float, default=2.0)
    parser.add_argument("--Delta", type=float, default=0.1)
    parser.add_argument("--exact-teacher", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args()
    enable_compilation_cache()
    config = SLRConfig(args.variant, args.D[0], LengthLaw.fixed(args.L), args.nu, args.Delta)
    sampling = ScalingSampling(exact_teacher=args.exact_teacher)
    studies = []
    for alpha in args.alpha:
        start = time.perf_counter()
        study = state_evolution_gap(config, alpha, args.D, args.teachers, sampling)
        studies.append(study)
        for row in study.rows:
            print(
                f"{args.variant} alpha {alpha:g} D {row.D} {row.estimator:>14}: "
                f"{row.measured:.4f} (theory {row.theory:.4f}, gap {row.gap:+.4f} "
                f"+- {row.stderr:.4f})"
            )
        for name, fit in study.fits.items():
            print(
                f"{args.variant} alpha {alpha:g} {name:>14}: gap = {fit.intercept:+.4f} +- "
                f"{fit.intercept_stderr:.4f} + ({fit.slope:+.3f} +- {fit.slope_stderr:.3f}) / D"
            )
        print(f"alpha {alpha:g}: {time.perf_counter() - start:.0f} s", flush=True)
    if args.json:
        text = json_text([study.to_dict() for study in studies], indent=1)
        atomic_write(args.json, lambda tmp: tmp.write_text(text))


if __name__ == "__main__":
    main()

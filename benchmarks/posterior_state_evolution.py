"""Finite-D posterior errors against the state evolution as D grows.

Teachers (prior draws, or exact with ``--exact-teacher``), ``sampler="auto"`` from random starts,
unbiased errors of the Bayes-optimal (weighted) and plain predictors and, on the same test
sequences, the paired difference to each teacher's own known-direction (oracle) error; the gap
of each to its theory at each ``D`` (``bayes - oracle`` against the state evolution minus the
population Bayes error) and its fit ``a + b/D`` (``a`` = the residual at ``D -> inf``, with its
standard error). Every finished ``(alpha, D)`` is printed as it ends. ``--amp``: GAMP's
posterior (random start, ``--dtype``) in place of the sampler's, at the sizes only it reaches.

Run: ``.venv/bin/python benchmarks/posterior_state_evolution.py --variant spiked --alpha 2 4
--D 25 50 100 200 --teachers 8 [--json out.json]``; GAMP: ``... --amp --D 1000 2000 4000``.
Runs of other sizes or teachers (``--seed``: the first teacher's) are pooled by ``--merge
A.json B.json ... [--json out.json]``.
"""

from __future__ import annotations

import argparse
import pathlib
import time

import bayes_slr  # noqa: F401  (float64)
from bayes_slr.jax_setup import enable_compilation_cache
from bayes_slr.models.spec import LengthLaw, SLRConfig
from bayes_slr.records import atomic_write, json_text, read_json
from bayes_slr.studies.amp_records import AMPSettings
from bayes_slr.studies.posterior_scaling import (
    ScalingSampling,
    ScalingSettings,
    ScalingStudy,
    merge_studies,
    state_evolution_gap,
)


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
    parser.add_argument("--amp", action="store_true", help="GAMP in place of the sampler")
    parser.add_argument("--dtype", default="float64", help="GAMP's working precision")
    parser.add_argument("--tol", type=float, default=AMPSettings.tol, help="GAMP's tolerance")
    parser.add_argument("--N-test", type=int, default=ScalingSampling.N_test)
    parser.add_argument("--seed", type=int, default=1000, help="the first teacher's seed")
    parser.add_argument("--merge", nargs="+", help="pool the studies of these JSON outputs")
    parser.add_argument("--json")
    args = parser.parse_args()
    enable_compilation_cache()
    if args.merge:
        studies = _merged(args.merge)
    else:
        studies = _run(args)
    if args.json:
        text = json_text([study.to_dict() for study in studies], indent=1)
        atomic_write(args.json, lambda tmp: tmp.write_text(text))


def _merged(paths: list[str]) -> list[ScalingStudy]:
    """The studies of ``paths`` pooled per ``alpha`` (in the order they first appear)."""
    by_alpha: dict[float, list[ScalingStudy]] = {}
    for path in paths:
        for data in read_json(pathlib.Path(path).read_text()):
            study = ScalingStudy.from_dict(data)
            by_alpha.setdefault(study.alpha, []).append(study)
    studies = [merge_studies(group) for group in by_alpha.values()]
    for study in studies:
        _report(study, study.config.variant)
    return studies


def _run(args: argparse.Namespace) -> list[ScalingStudy]:
    config = SLRConfig(args.variant, args.D[0], LengthLaw.fixed(args.L), args.nu, args.Delta)
    sampling = ScalingSampling(exact_teacher=args.exact_teacher, N_test=args.N_test)
    amp = AMPSettings(dtype=args.dtype, tol=args.tol) if args.amp else None
    studies = []
    for alpha in args.alpha:
        start = time.perf_counter()
        settings = ScalingSettings(alpha, tuple(args.D), args.teachers, sampling, amp=amp)
        study = state_evolution_gap(config, settings, args.seed)
        studies.append(study)
        _report(study, args.variant)
        print(f"alpha {alpha:g}: {time.perf_counter() - start:.0f} s", flush=True)
    return studies


def _report(study: ScalingStudy, variant: str) -> None:
    """Print the rows, the fits and the teachers whose GAMP did not converge."""
    alpha = study.alpha
    for row in study.rows:
        print(
            f"{variant} alpha {alpha:g} D {row.D} {row.estimator:>14}: "
            f"{row.measured:.4f} (theory {row.theory:.4f}, gap {row.gap:+.4f} "
            f"+- {row.stderr:.4f})"
        )
    for name, fit in study.fits.items():
        print(
            f"{variant} alpha {alpha:g} {name:>14}: gap = {fit.intercept:+.4f} +- "
            f"{fit.intercept_stderr:.4f} + ({fit.slope:+.3f} +- {fit.slope_stderr:.3f}) / D"
        )
    unconverged = [
        (D, e.seed) for D, errors in study.teachers.items() for e in errors if not e.converged
    ]
    print(f"alpha {alpha:g}: not converged (D, seed): {unconverged or 'none'}", flush=True)


if __name__ == "__main__":
    main()

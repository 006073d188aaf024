"""When two softmax heads specialise in the SGD ODE and the population flow, from the starts of
the online-SGD runs at several ``D`` (docs/multihead.md, "Dynamics").

Run: ``PYTHONPATH=. .venv/bin/python docs/results/multihead/scripts/specialisation_ode.py
[--presence 1] [--sizes 50 100 200] [--seeds 4] [--t-max 100] [--methods sgd flow]``; prints
one line per (D, seed) and a Markdown table per dimension, and the wall time.

Task as in ``specialisation.py``. Each ODE (the ``dynamics`` methods ``sgd-ode`` and ``flow``
with two student heads, :func:`~bayes_slr.studies.dynamics.dynamics_point`, ``2^14`` draws)
starts at the overlaps of the online-SGD run of the same seed and ``D`` (its first logged point,
cross overlaps included: overlaps of order ``0.1/sqrt(D)`` are what breaks the heads' symmetry),
and is read for specialisation as the runs are
(:func:`~bayes_slr.studies.dynamics.read_specialisation`).
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import bayes_slr  # noqa: F401  (float64)
from bayes_slr import LengthLaw, SLRConfig
from bayes_slr.studies.dynamics import dynamics_point, summarise
from bayes_slr.studies.dynamics_methods import DynamicsRequest, get_dynamics_method

METHODS = {"sgd": "sgd-ode", "flow": "flow"}
"""The ODE of each ``--methods`` name (the ``dynamics`` method that solves it)."""


def main() -> None:
    """Solve the ODEs and print their specialisation."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presence", type=float, default=1.0)
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 100, 200])
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--t-max", type=float, default=100.0)
    parser.add_argument("--methods", nargs="+", default=["sgd", "flow"], choices=tuple(METHODS))
    args = parser.parse_args()
    start = time.perf_counter()
    rows = []
    for D in args.sizes:
        config = SLRConfig(
            "spiked", D, LengthLaw.fixed(3), 2.0, Delta=0.0, heads=2, presence=args.presence
        )
        for method in args.methods:
            ode = get_dynamics_method(METHODS[method])
            step = dict(eta=1.0, batch=32) if method == "sgd" else {}
            request = DynamicsRequest(D=D, t_max=args.t_max, log_points=48, ode_draws=2**14, **step)
            runs = []
            for seed in range(args.seeds):
                settings = ode.settings(request)
                run = dynamics_point(config, dataclasses.replace(settings, student_heads=2), seed)
                read = run.specialisation
                runs.append(run)
                print(
                    f"{method} D={D} seed={seed} escape={read.escape_time:.2f} "
                    f"heads->{read.permutation} at {[round(t, 1) for t in read.head_times]} "
                    f"error={run.final_error:.4f} cross={read.cross_overlap:.3f}",
                    flush=True,
                )
            rows.append((method, summarise(D, runs)))
    print(
        "| ODE | D | runs | specialised | leaves the start | specialised at | plateau "
        "| final error |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for method, s in rows:
        print(
            f"| {method} | {s.D} | {s.seeds} | {s.specialised} | {s.escape_time:.2f} "
            f"| {s.specialisation_time:.1f} +- {s.specialisation_stderr:.1f} "
            f"| {s.plateau:.1f} +- {s.plateau_stderr:.1f} | {s.final_error:.4f} |"
        )
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()

"""When two softmax heads specialise in the SGD ODE and the population flow, from the starts of
the online-SGD runs at several ``D`` (docs/multihead.md, "Dynamics").

Run: ``PYTHONPATH=. .venv/bin/python docs/results/multihead/scripts/specialisation_ode.py
[--presence 1] [--sizes 50 100 200] [--seeds 4] [--t-max 100] [--methods sgd flow]``; prints
one line per (D, seed) and a Markdown table per dimension, and the wall time.

Task as in ``specialisation.py``. Each ODE (:func:`~bayes_slr.formulas.multihead_flow.
solve_heads_flow`, ``2^14`` draws) starts at the overlaps of the online-SGD run of the same seed
and ``D`` (its first logged point, cross overlaps included: overlaps of order ``0.1/sqrt(D)``
are what breaks the heads' symmetry), and is read for specialisation as the runs are
(:func:`~bayes_slr.studies.multihead_dynamics.read_specialisation`).
"""

from __future__ import annotations

import argparse
import time

import bayes_slr  # noqa: F401  (float64)
from bayes_slr import LengthLaw, SLRConfig
from bayes_slr.attention.multihead_sgd import HeadsSGDRun, train_heads_sgd
from bayes_slr.formulas.multihead_flow import HeadsFlowRun, solve_heads_flow
from bayes_slr.studies.multihead_dynamics import read_specialisation, summarise


def main() -> None:
    """Solve the ODEs and print their specialisation."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presence", type=float, default=1.0)
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 100, 200])
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--t-max", type=float, default=100.0)
    parser.add_argument("--methods", nargs="+", default=["sgd", "flow"], choices=("sgd", "flow"))
    args = parser.parse_args()
    start = time.perf_counter()
    rows = []
    for D in args.sizes:
        config = SLRConfig(
            "spiked", D, LengthLaw.fixed(3), 2.0, Delta=0.0, heads=2, presence=args.presence
        )
        for method in args.methods:
            step = dict(eta=1.0, batch=32) if method == "sgd" else {}
            runs = []
            for seed in range(args.seeds):
                sgd = HeadsSGDRun(config, "softmax", 2, 1.0, 1, 32, seed)
                first = train_heads_sgd(sgd).points[0]
                ode = solve_heads_flow(
                    HeadsFlowRun(
                        config,
                        "softmax",
                        first,
                        args.t_max,
                        method=method,
                        log_points=48,
                        mc_samples=2**14,
                        **step,
                    )
                )
                run = read_specialisation(ode, D, seed)
                runs.append(run)
                print(
                    f"{method} D={D} seed={seed} escape={run.escape_time:.2f} "
                    f"heads->{run.permutation} at {[round(t, 1) for t in run.head_times]} "
                    f"error={run.final_error:.4f} cross={run.cross_overlap:.3f}",
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

"""When two softmax heads specialise under online SGD, against ``D`` (docs/multihead.md,
"Dynamics").

Run: ``PYTHONPATH=. .venv/bin/python docs/results/multihead/scripts/specialisation.py
[--presence 1] [--sizes 50 100 200] [--seeds 8] [--t-max 150] [--json out.json]``; prints a
Markdown table per dimension and the wall time, and with ``--json`` writes the study's record.

Task: spiked, ``H = H_s = 2``, ``L = 3``, ``nu = 2``, ``Delta = 0``, exact teacher, online SGD at
``eta = 1``, ``B = 32`` from ``k, v ~ N(0, 0.01 I)``
(:func:`~bayes_slr.studies.dynamics.specialisation_study`).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import bayes_slr  # noqa: F401  (float64)
from bayes_slr import LengthLaw, SLRConfig
from bayes_slr.records import json_text
from bayes_slr.studies.dynamics import specialisation_study
from bayes_slr.studies.dynamics_records import SpecialisationSettings


def cell(mean: float, stderr: float) -> str:
    """``mean +- stderr`` (``-`` without a mean)."""
    if mean != mean:
        return "-"
    return f"{mean:.1f}" if stderr != stderr else f"{mean:.1f} +- {stderr:.1f}"


def main() -> None:
    """Run the study and print its table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presence", type=float, default=1.0)
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 100, 200])
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--t-max", type=float, default=150.0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    config = SLRConfig(
        "spiked", 50, LengthLaw.fixed(3), 2.0, Delta=0.0, heads=2, presence=args.presence
    )
    start = time.perf_counter()
    settings = SpecialisationSettings(sizes=args.sizes, seeds=args.seeds, t_max=args.t_max)
    study = specialisation_study(config, settings, seed=0)
    print(
        "| D | seeds | specialised | stalled | leaves the start | specialised at | plateau "
        "| final error |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for s in study.summaries:
        print(
            f"| {s.D} | {s.seeds} | {s.specialised} | {s.seeds - s.specialised} "
            f"| {cell(s.escape_time, s.escape_stderr)} "
            f"| {cell(s.specialisation_time, s.specialisation_stderr)} "
            f"| {cell(s.plateau, s.plateau_stderr)} "
            f"| {s.final_error:.4f} +- {s.final_error_stderr:.4f} |"
        )
    print()
    for run in study.runs:
        read = run.specialisation
        times = ", ".join(f"{t:.1f}" for t in read.head_times)
        print(
            f"D={run.D} seed={run.seed} escape={read.escape_time:.2f} heads->{read.permutation} "
            f"at [{times}] specialised={read.specialised} error={run.final_error:.4f} "
            f"cross={read.cross_overlap:.3f}"
        )
    print(f"\n{time.perf_counter() - start:.0f} s")
    if args.json is not None:
        args.json.write_text(json_text(study.to_dict()))


if __name__ == "__main__":
    main()

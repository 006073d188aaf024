"""ERM of multi-head attention students on two-head SLR against ``alpha`` (docs/multihead.md
section 7).

Run: ``PYTHONPATH=. .venv/bin/python docs/results/multihead/scripts/erm_against_alpha.py
[--D 8] [--presence 0.5] [--seeds 4] [--starts 4] [--lam 1]``; prints two Markdown tables and the
wall time.

Task: spiked, ``H = 2``, ``L = 3``, ``nu = 2``, ``Delta = 0``, exact teacher; ridge ``--lam`` (on
the sum of the squared errors, :mod:`bayes_slr.attention.training`). First table: for
softmax and Bayes-softmax, ``H_s = 2`` student heads at each ``alpha``: the ERM test error (mean
over seeds, standard error), and the smallest cosine of a matched (student, teacher) pair of
keys and of values over the seeds (1: every seed specialised each head on its own teacher head).
Second table: ``H_s = 1, 2, 3`` at the largest ``alpha``, beside each optimum of
:func:`~bayes_slr.formulas.optimum.student_heads_optimum`, with the largest ``q_v`` of an
unmatched (extra) student head.
"""

from __future__ import annotations

import argparse
import time

import bayes_slr  # noqa: F401  (float64)
from bayes_slr import LengthLaw, SLRConfig
from bayes_slr.formulas.optimum import heads_at_optimum, optimal_population_error
from bayes_slr.studies.erm import ERMSettings, ERMSummary, erm_study
from bayes_slr.studies.gap_rows import matched_cosines

ACTIVATIONS = ("softmax", "bayes_softmax")
ALPHAS = (8.0, 16.0, 32.0, 64.0, 128.0)


def extra_norm(run: ERMSummary) -> str:
    """The largest ``q_v`` of an unmatched student head over the seeds (``-`` without one)."""
    norms = [
        seed.head_overlaps.q_v[student]
        for seed in run.per_seed
        for student, teacher in enumerate(seed.head_overlaps.permutation)
        if teacher is None
    ]
    return f"{max(norms):.3g}" if norms else "-"


def main() -> None:
    """Print the tables of ERM against ``alpha`` and against ``H_s``, and the time they took."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--D", type=int, default=8)
    parser.add_argument("--presence", type=float, default=0.5)
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--starts", type=int, default=4)
    parser.add_argument("--lam", type=float, default=1.0)
    args = parser.parse_args()
    start = time.perf_counter()
    config = SLRConfig("spiked", args.D, LengthLaw.fixed(3), 2.0, heads=2, presence=args.presence)
    aligned = {name: optimal_population_error(name, config) for name in ACTIVATIONS}
    settings = ERMSettings(
        lam=args.lam, seeds=args.seeds, starts=args.starts, exact_teacher=True, N_test=20_000
    )
    print("| alpha | " + " | ".join(f"{a} ERM | {a} min cos (k, v)" for a in ACTIVATIONS) + " |")
    print("|---|" + "---|---|" * len(ACTIVATIONS))
    for alpha in ALPHAS:
        cells = [f"{alpha:g}"]
        for name in ACTIVATIONS:
            run = erm_study(
                config, settings.replace(activation=name, alpha=alpha, student_heads=2), 0
            )
            cells.append(f"{run.test_error:.4f} +- {run.stderr:.4f}")
            heads = [seed.head_overlaps for seed in run.per_seed]
            cells.append("{:.3f}, {:.3f}".format(*matched_cosines(heads)))
        print("| " + " | ".join(cells) + " |", flush=True)
    print(
        "| population optimum | "
        + " | ".join(f"{aligned[a].error:.4f} | " for a in ACTIVATIONS)
        + " |"
    )
    print(f"\nH_s at alpha = {ALPHAS[-1]:g}\n")
    print("| activation | H_s | ERM | optimum | largest q_v of an extra head |")
    print("|---|---|---|---|---|")
    for name in ACTIVATIONS:
        for student_heads in (1, 2, 3):
            run = erm_study(
                config,
                settings.replace(activation=name, alpha=ALPHAS[-1], student_heads=student_heads),
                0,
            )
            optimum = heads_at_optimum(aligned[name], config, student_heads).error
            print(
                f"| {name} | {student_heads} | {run.test_error:.4f} +- {run.stderr:.4f} | "
                f"{optimum:.4f} | {extra_norm(run)} |",
                flush=True,
            )
    print(f"\nwall time {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()

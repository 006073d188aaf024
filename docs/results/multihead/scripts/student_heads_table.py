"""Population optimum of ``H_s`` student heads (aligned one to one, or extra) on an ``H``-head
teacher for each activation, with a Monte Carlo check at each optimum's heads (docs/multihead.md
section 6).

Run: ``PYTHONPATH=. .venv/bin/python docs/results/multihead/scripts/student_heads_table.py
[--heads 2] [--L 3] [--nu 2] [--samples 100000]``; prints a Markdown table and the wall time.

For each ``rho`` in 0.5 and 1 and each activation (softmax, softmax-1, Bayes-softmax, linear): the
optimum of ``H_s = 1, 2, 3`` student heads (quadrature; in brackets the error at its heads by Monte
Carlo over ``--samples`` sequences, seed 0, with its standard error), and the error of ``H + 1``
heads whose extra head is not silenced but keeps an aligned head's optimal ``(q_k, q_v, c)``
(quadrature, and Monte Carlo): the noise an untrained extra head of that size adds.
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import bayes_slr  # noqa: F401  (float64)
from bayes_slr import LengthLaw, SLRConfig
from bayes_slr.formulas.bayes import presence_bayes_error_exact
from bayes_slr.formulas.optimum import (
    heads_at_optimum,
    optimal_population_error,
    student_heads_error,
)
from bayes_slr.formulas.population_mc import student_heads_error_mc

PRESENCES = (0.5, 1.0)
ACTIVATIONS = ("softmax", "softmax1", "bayes_softmax", "linear")
STUDENT_HEADS = (1, 2, 3)


def main() -> None:
    """Print the table of optima against ``H_s`` and the time it took."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--heads", type=int, default=2)
    parser.add_argument("--L", type=int, default=3)
    parser.add_argument("--nu", type=float, default=2.0)
    parser.add_argument("--samples", type=int, default=100_000)
    args = parser.parse_args()
    start = time.perf_counter()
    header = ["rho", "activation", *(f"H_s = {h}" for h in STUDENT_HEADS), "extra head unsilenced"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for rho in PRESENCES:
        config = SLRConfig(
            "spiked", 1, LengthLaw.fixed(args.L), args.nu, heads=args.heads, presence=rho
        )
        print(f"| {rho:g} | Bayes | {presence_bayes_error_exact(config).value:.6f} | | | |")
        for name in ACTIVATIONS:
            aligned = optimal_population_error(name, config)
            cells = [f"{rho:g}", name]
            for student_heads in STUDENT_HEADS:
                optimum = heads_at_optimum(aligned, config, student_heads)
                mc = student_heads_error_mc(name, config, optimum.heads, samples=args.samples)
                cells.append(
                    f"{optimum.error:.6f} (MC {float(mc.mean):.4f} +- {float(mc.stderr):.4f})"
                )
            heads = heads_at_optimum(aligned, config, args.heads + 1).heads
            unsilenced = heads[:-1] + (dataclasses.replace(heads[-1], q_v=aligned.overlaps.q_v),)
            mc = student_heads_error_mc(name, config, unsilenced, samples=args.samples)
            cells.append(
                f"{student_heads_error(name, config, unsilenced).value:.6f} "
                f"(MC {float(mc.mean):.4f} +- {float(mc.stderr):.4f})"
            )
            print("| " + " | ".join(cells) + " |", flush=True)
    print(f"\nwall time {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()

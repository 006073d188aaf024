"""Population optimum of each activation on multi-head SLR against the presence ``rho``, with a
Monte Carlo check at each optimum's overlaps (docs/multihead.md section 5).

Run: ``PYTHONPATH=. .venv/bin/python docs/results/multihead/scripts/optimum_against_presence.py
[--heads 2] [--L 3] [--nu 2] [--samples 100000]``; prints a Markdown table and the wall time.

For each ``rho`` in 0.25, 0.5, 0.75, 1: the Bayes error by quadrature, then for softmax,
softmax-1, Bayes-softmax and linear attention the population optimum over the overlaps of ``H``
aligned heads (and the offset of Bayes-softmax) by quadrature, and the error at those overlaps by
Monte Carlo over ``--samples`` sequences (seed 0) with its standard error.
"""

from __future__ import annotations

import argparse
import time

import bayes_slr  # noqa: F401  (float64)
from bayes_slr import LengthLaw, SLRConfig
from bayes_slr.formulas.bayes import presence_bayes_error_exact
from bayes_slr.formulas.optimum import optimal_population_error
from bayes_slr.formulas.population_mc import population_error_mc

PRESENCES = (0.25, 0.5, 0.75, 1.0)
ACTIVATIONS = ("softmax", "softmax1", "bayes_softmax", "linear")


def main() -> None:
    """Print the table of optima against ``rho`` and the time it took."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--heads", type=int, default=2)
    parser.add_argument("--L", type=int, default=3)
    parser.add_argument("--nu", type=float, default=2.0)
    parser.add_argument("--samples", type=int, default=100_000)
    args = parser.parse_args()
    start = time.perf_counter()
    header = ["rho", "Bayes", *ACTIVATIONS]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for rho in PRESENCES:
        config = SLRConfig(
            "spiked", 1, LengthLaw.fixed(args.L), args.nu, heads=args.heads, presence=rho
        )
        cells = [f"{rho:g}", f"{presence_bayes_error_exact(config).value:.6f}"]
        for name in ACTIVATIONS:
            optimum = optimal_population_error(name, config)
            o = optimum.overlaps
            mc = population_error_mc(
                name, config, o.m_k, o.q_k, o.m_v, o.q_v, o.c, samples=args.samples
            )
            cells.append(f"{optimum.error:.6f} (MC {float(mc.mean):.4f} +- {float(mc.stderr):.4f})")
        print("| " + " | ".join(cells) + " |", flush=True)
    print(f"\nwall time {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()

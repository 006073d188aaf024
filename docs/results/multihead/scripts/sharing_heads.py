"""Student heads on two teacher heads at ``rho < 1``, their keys and values free to mix both
teacher heads: the optimum over all overlaps against the heads aligned one to one, paired on the
same fresh sequences (docs/multihead.md section 6).

Run: ``PYTHONPATH=. .venv/bin/python docs/results/multihead/scripts/sharing_heads.py
[--presence 0.5] [--student-heads 2] [--activation softmax] [--search 200000]
[--check 2000000]``; prints the optimum found, the aligned one on the same sequences, their
difference, the overlap matrices, every start's error on the search sample and the wall time.

Task: spiked, ``H = 2``, ``L = 3``, ``nu = 2``.
:func:`~bayes_slr.formulas.all_overlaps.all_overlaps_optimum`: L-BFGS over the keys'
overlaps (values in closed form) on ``--search`` sequences (seed 0) from the aligned optimum, a
mixing start and two random ones; then both points on ``--check`` fresh sequences
(seed 1).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import bayes_slr  # noqa: F401  (float64)
from bayes_slr import LengthLaw, SLRConfig
from bayes_slr.formulas.all_overlaps import all_overlaps_optimum


def main() -> None:
    """Print the optimum over all overlaps beside the aligned one."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presence", type=float, default=0.5)
    parser.add_argument("--student-heads", type=int, default=2)
    parser.add_argument("--activation", default="softmax")
    parser.add_argument("--search", type=int, default=200_000)
    parser.add_argument("--check", type=int, default=2_000_000)
    args = parser.parse_args()
    start = time.perf_counter()
    config = SLRConfig("spiked", 1, LengthLaw.fixed(3), 2.0, heads=2, presence=args.presence)
    found = all_overlaps_optimum(
        args.activation, config, args.student_heads, args.search, args.check
    )
    print(f"aligned optimum (quadrature): {found.aligned_error:.5f}")
    print(f"aligned optimum (MC):  {found.aligned_mc:.5f} +- {found.aligned_mc_stderr:.5f}")
    print(f"all-overlap optimum (MC): {found.error:.5f} +- {found.stderr:.5f}")
    print(f"paired difference: {found.difference:+.5f} +- {found.difference_stderr:.5f}")
    for name in ("m_k", "q_k", "m_v", "q_v"):
        print(f"{name}: {np.round(np.array(getattr(found, name)), 3).tolist()}")
    if found.c:
        print(f"c: {np.round(found.c, 3).tolist()}")
    starts = ", ".join(
        f"{name} {error:.6f}" for name, error in zip(found.starts, found.start_errors, strict=True)
    )
    print(f"starts (search sample): {starts}; {found.agreeing} within 1e-4 of the best")
    print(f"\nwall time {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()

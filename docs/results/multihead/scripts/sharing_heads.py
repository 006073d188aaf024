"""Two softmax student heads on two teacher heads at ``rho < 1``, their keys and values free to
mix both teacher heads: the best error by Monte Carlo against the heads aligned one to one
(docs/multihead.md section 6).

Run: ``PYTHONPATH=. .venv/bin/python docs/results/multihead/scripts/sharing_heads.py
[--presence 0.5] [--samples 2000000]``; prints the two errors, the overlaps and the wall time.

Task: spiked, ``H = 2``, ``L = 3``, ``nu = 2``. Nelder-Mead (adaptive) over both heads'
``(m_k1, m_k2, r_k, m_v1, m_v2)`` (value residuals 0) minimising the Monte Carlo error on one fixed
set of 20000 sequences (seed 0), from the aligned optimum moved by ``N(0, 0.05^2)`` (seed 0);
then the error of the point found and of the aligned optimum on ``--samples`` fresh sequences
(seed 1, the same sequences for both, so their difference is known better than each standard
error says).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.optimize import minimize

import bayes_slr  # noqa: F401  (float64)
from bayes_slr import LengthLaw, SLRConfig
from bayes_slr.formulas.optimum import optimal_population_error
from bayes_slr.formulas.population_mc import mixed_heads_error_mc
from bayes_slr.models.simulate import StreamedMean

SEARCH_SAMPLES = 20_000


def error_at(config: SLRConfig, point: np.ndarray, samples: int, seed: int) -> StreamedMean:
    """The Monte Carlo error of two softmax heads, ``point`` their ``(m_k1, m_k2, r_k, m_v1,
    m_v2)`` one after the other."""
    heads = point.reshape(2, 5)
    m_k, r_k, m_v = heads[:, :2], heads[:, 2], heads[:, 3:]
    q_k, q_v = np.sum(m_k**2, axis=1) + r_k**2, np.sum(m_v**2, axis=1)
    return mixed_heads_error_mc("softmax", config, m_k, q_k, m_v, q_v, 0.0, samples, seed)


def main() -> None:
    """Print the errors of the best sharing heads and of the aligned heads."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presence", type=float, default=0.5)
    parser.add_argument("--samples", type=int, default=2_000_000)
    args = parser.parse_args()
    start = time.perf_counter()
    config = SLRConfig("spiked", 1, LengthLaw.fixed(3), 2.0, heads=2, presence=args.presence)
    o = optimal_population_error("softmax", config).overlaps
    r_k = np.sqrt(max(o.q_k - o.m_k**2, 0.0))
    aligned = np.array([o.m_k, 0.0, r_k, o.m_v, 0.0, 0.0, o.m_k, r_k, 0.0, o.m_v])
    moved = aligned + 0.05 * np.random.default_rng(0).normal(size=aligned.size)
    found = minimize(
        lambda x: float(error_at(config, x, SEARCH_SAMPLES, 0).mean),
        moved,
        method="Nelder-Mead",
        options={"maxiter": 4000, "xatol": 1e-4, "fatol": 1e-7, "adaptive": True},
    ).x
    for label, point in (("aligned optimum", aligned), ("sharing heads found", found)):
        fresh = error_at(config, point, args.samples, 1)
        overlaps = "; ".join(", ".join(f"{x:.3f}" for x in head) for head in point.reshape(2, 5))
        print(f"{label}: {float(fresh.mean):.5f} +- {float(fresh.stderr):.5f} at {overlaps}")
    print(f"\nwall time {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()

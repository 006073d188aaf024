"""Batched estimator evaluation: jitted ``predict`` vs a vectorised NumPy baseline, same maths.

Run: ``.venv/bin/python benchmarks/estimator_throughput.py [--json out.json]``.
Prints sequences per second for each activation and task shape, and the ratio
JAX / NumPy, both measured in this process (best of several repeats, after a warm-up
call that compiles).
"""

from __future__ import annotations

import argparse
import json
import math
import time

import jax
import numpy as np
from scipy.special import erf

import bayes_slr  # noqa: F401  (float64)
from bayes_slr.attention.activations import activation_names
from bayes_slr.attention.estimators import AttentionParams, predict
from bayes_slr.models.simulate import draw_teacher, simulate
from bayes_slr.models.spec import LengthLaw, SLRConfig
from bayes_slr.records import package_versions

SHAPES = ((3, False), (100, True))  # (Lbar, variable length)
D, TOKENS, REPEATS = 100, 200_000, 5  # N = TOKENS // Lbar sequences: about 160 MB of tokens


def numpy_predict(
    k: np.ndarray, v: np.ndarray, c: float, X: np.ndarray, lengths: np.ndarray, activation: str
) -> np.ndarray:
    """The same estimator in vectorised NumPy (masked over the padding)."""
    projections = X @ np.stack([k, v], axis=-1) / math.sqrt(X.shape[-1])
    chi, z = projections[..., 0], projections[..., 1]
    mask = np.arange(X.shape[1]) < lengths[:, None]
    if activation == "softmax":
        logits = np.where(mask, chi, -np.inf)
        weights = np.exp(logits - logits.max(axis=1, keepdims=True))
    elif activation == "softplus":
        weights = np.where(mask, np.logaddexp(0.0, chi), 0.0)
    elif activation == "linear":
        weights = np.where(mask, 1.0 + chi, 0.0)
    else:
        weights = np.where(mask, 1.0 + erf(c + chi), 0.0)
    if activation in ("softmax", "softplus"):
        weights = weights / weights.sum(axis=1, keepdims=True)
    return np.sum(weights * z, axis=1)


def best_time(call) -> float:
    """Smallest wall time of ``REPEATS`` calls (after one warm-up call)."""
    call()
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args()
    rows = []
    print(
        f"device: {jax.devices()[0].platform}, D={D}, N={TOKENS} // Lbar sequences, best of "
        f"{REPEATS}"
    )
    print(
        f"{'activation':>10} {'Lbar':>5} {'var':>4} {'jax seq/s':>12} {'numpy seq/s':>12} "
        f"{'ratio':>7}"
    )
    for Lbar, variable in SHAPES:
        N = TOKENS // Lbar
        config = SLRConfig(
            "spiked", D, LengthLaw.uniform(Lbar) if variable else LengthLaw.fixed(Lbar), 2.0
        )
        teacher = draw_teacher(jax.random.PRNGKey(0), D)
        batch = simulate(jax.random.PRNGKey(1), config, teacher, N)
        params = AttentionParams(teacher.k_star, teacher.v_star, jax.numpy.asarray(0.2))
        X, lengths = np.asarray(batch.X), np.asarray(batch.lengths)
        k, v = np.asarray(params.k), np.asarray(params.v)
        for activation in activation_names():
            jax_out = predict(params, batch.X, batch.lengths, activation)
            np_out = numpy_predict(k, v, 0.2, X, lengths, activation)
            assert np.allclose(np.asarray(jax_out), np_out, rtol=1e-9, atol=1e-9), activation
            t_jax = best_time(
                lambda: predict(params, batch.X, batch.lengths, activation).block_until_ready()
            )
            t_np = best_time(lambda: numpy_predict(k, v, 0.2, X, lengths, activation))
            row = {
                "activation": activation,
                "Lbar": Lbar,
                "variable_length": variable,
                "N": N,
                "jax_seq_per_s": N / t_jax,
                "numpy_seq_per_s": N / t_np,
                "ratio": t_np / t_jax,
            }
            rows.append(row)
            print(
                f"{activation:>10} {Lbar:>5} {str(variable):>4} {row['jax_seq_per_s']:>12.3g} "
                f"{row['numpy_seq_per_s']:>12.3g} {row['ratio']:>7.2f}"
            )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            record = {
                "D": D,
                "device": jax.devices()[0].platform,
                "versions": package_versions(),
                "rows": rows,
            }
            json.dump(record, handle, indent=2)


if __name__ == "__main__":
    main()

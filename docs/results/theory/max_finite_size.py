"""Max-SLR ERM at several ``D`` against the replica-symmetric theory (docs/theory.md).

``run`` trains the simulation points of ``bayes-slr theory --simulate SIZE --seeds S --seed B``
(L-BFGS from random starts, exact teachers ``|k*|^2 = |v*|^2 = D``, ``10^4`` test sequences per
teacher; ``SIZE = sqrt(N D)``, so ``D = SIZE / sqrt(alpha)``) without solving the equations each
time, and appends one line per (``L``, activation, ``D``, ``B``) to ``max_finite_size.jsonl``: the
per-teacher errors and the seconds it took. Chunks with other ``B`` add independent teachers.
``fit`` pools the teachers of each (``L``, activation, ``D``), fits a constant and the
finite-size law ``e(D) = a + b / D`` by weighted least squares and compares ``a`` with the
replica error of the stored ``theory --json`` runs at 8192 draws or more (:func:`replica`, pooled
by :func:`pooled_replica`: the spread of the draw sets is the theory's own Monte Carlo error)::

    python docs/results/theory/max_finite_size.py run --L 3 --D 100 200 400 --seeds 8 --seed 0
    python docs/results/theory/max_finite_size.py fit
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
LOG = HERE / "max_finite_size.jsonl"
ALPHA = 4.0
LAM = 1.0
ACTIVATIONS = ("softmax", "softplus")


def run(L: int, dimensions: list[int], seeds: int, seed: int) -> None:
    """Train ``seeds`` teachers of root seed ``seed`` at every ``D`` for both activations and
    append their errors to :data:`LOG`."""
    from bayes_slr.experiments.theory import Theory, TheoryOptions, TheoryPoint

    for D in dimensions:
        for activation in ACTIVATIONS:
            options = TheoryOptions(
                variant="max",
                L=L,
                activations=(activation,),
                alpha=(ALPHA,),
                lam=LAM,
                seed=seed,
                simulate=round(D * math.sqrt(ALPHA)),
                seeds=seeds,
            )
            start = time.perf_counter()
            row = Theory().solve(options, TheoryPoint("simulation", ALPHA, activation, "random"))
            record = {
                "L": L,
                "activation": activation,
                "D": row.diagnostics.D,
                "N": row.diagnostics.N,
                "seed": seed,
                "converged": row.converged,
                "errors": list(row.diagnostics.per_seed_test_error),
                "seconds": round(time.perf_counter() - start, 1),
            }
            with LOG.open("a") as log:
                log.write(json.dumps(record) + "\n")
            print(json.dumps(record))


def replica(L: int, activation: str) -> list[tuple[int, float]]:
    """The stored replica errors of ``activation`` on max ``nu = inf`` at ``L``, ``alpha = 4``,
    ``lam = 1``, ``Delta = 0.1`` and at least 8192 draws, as ``(draws, error)`` per draw set: the
    ``theory --json`` files here (``replica_*.json``) and those of docs/dynamics.md
    (``finite_alpha_replica_*``)."""
    paths = [*HERE.glob("replica_*.json"), *HERE.parent.glob("dynamics/finite_alpha_replica_*")]
    values = {}
    for path in paths:
        result = json.loads(path.read_text())
        config = result["config"]
        setting = (config["variant"], config["L"], config["alpha"], config["lam"], config["Delta"])
        # the channel's draws: ``mc_samples`` in files written before the option's rename
        draws = config.get("channel_draws", config.get("mc_samples"))
        if setting != ("max", L, [ALPHA], LAM, 0.1) or draws < 8192:
            continue
        for row in result["rows"]:
            if row["source"] == "theory" and row["estimator"] == activation and row["converged"]:
                values[(draws, config["seed"])] = row["test_error"]
    return [(draws, values[(draws, seed)]) for draws, seed in sorted(values)]


def pooled_replica(points: list[tuple[int, float]]) -> tuple[float, float]:
    """Mean of the replica errors weighted by their draws (the Monte Carlo variance of a point is
    ``sigma^2 / draws``) and its standard error, ``sigma^2`` estimated from the weighted spread
    (``nan`` with one point)."""
    draws = np.array([d for d, _ in points], float)
    errors = np.array([e for _, e in points])
    mean = float(np.sum(draws * errors) / np.sum(draws))
    if len(points) < 2:
        return mean, math.nan
    sigma2 = float(np.sum(draws * (errors - mean) ** 2) / (len(points) - 1))
    return mean, math.sqrt(sigma2 / np.sum(draws))


def fit_line(x: np.ndarray, y: np.ndarray, se: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Weighted least squares of ``y = a + b x``: ``(a, b)``, their standard errors, chi^2."""
    design = np.stack([np.ones_like(x), x], axis=1) / se[:, None]
    covariance = np.linalg.inv(design.T @ design)
    coefficients = covariance @ design.T @ (y / se)
    chi2 = float(np.sum(((y - coefficients[0] - coefficients[1] * x) / se) ** 2))
    return coefficients, np.sqrt(np.diag(covariance)), chi2


def describe(L: int, activation: str, pooled: dict[int, list[float]]) -> str:
    """One line: the pooled mean at each ``D``, the replica error, the fit and ``a`` against it."""
    D = np.array(sorted(pooled), float)
    mean = np.array([statistics.fmean(pooled[d]) for d in sorted(pooled)])
    se = np.array([statistics.stdev(pooled[d]) / math.sqrt(len(pooled[d])) for d in sorted(pooled)])
    cells = [f"D={d:.0f} ({len(pooled[d])}): {m:.4f} +- {s:.4f}" for d, m, s in zip(D, mean, se)]
    line = f"max L={L} {activation}: " + ", ".join(cells)
    theory = replica(L, activation)
    if theory:
        reference, theory_se = pooled_replica(theory)
        sets = ", ".join(f"{e:.4f} ({d})" for d, e in theory)
        line += f"; replica {reference:.4f} +- {theory_se:.4f} (draws: {sets})"
    flat = float(np.sum(mean / se**2) / np.sum(1 / se**2))
    flat_se = float(np.sum(1 / se**2) ** -0.5)
    flat_chi2 = float(np.sum(((mean - flat) / se) ** 2))
    line += f"; constant: {flat:.4f} +- {flat_se:.4f}, chi2 = {flat_chi2:.2f} ({len(D) - 1} dof)"
    if theory:
        gap = flat - reference
        line += f", minus replica {gap:+.4f} ({gap / math.hypot(flat_se, theory_se):+.1f} SE)"
    if len(D) >= 3:
        (a, b), (sa, sb), chi2 = fit_line(1.0 / D, mean, se)
        line += f"; a + b/D: a = {a:.4f} +- {sa:.4f}, b = {b:.2f} +- {sb:.2f}"
        line += f", chi2 = {chi2:.2f} ({len(D) - 2} dof)"
        if theory:
            gap = a - reference
            line += f"; a - replica = {gap:+.4f} ({gap / math.hypot(sa, theory_se):+.1f} SE)"
    return line


def fit() -> None:
    """Print :func:`describe` for every (``L``, activation) in the log."""
    records = [json.loads(line) for line in LOG.read_text().splitlines()]
    for L in sorted({r["L"] for r in records}):
        for activation in ACTIVATIONS:
            pooled: dict[int, list[float]] = {}
            for r in records:
                if r["L"] == L and r["activation"] == activation:
                    pooled.setdefault(r["D"], []).extend(r["errors"])
            if pooled:
                print(describe(L, activation, pooled))


def main() -> None:
    """Parse ``run`` or ``fit``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    train = commands.add_parser("run", help="train teachers and append them to the log")
    train.add_argument("--L", type=int, required=True)
    train.add_argument("--D", type=int, nargs="+", required=True)
    train.add_argument("--seeds", type=int, required=True)
    train.add_argument("--seed", type=int, default=0)
    commands.add_parser("fit", help="pool, fit a + b/D, compare with the replica")
    arguments = parser.parse_args()
    if arguments.command == "run":
        run(arguments.L, arguments.D, arguments.seeds, arguments.seed)
    else:
        fit()


if __name__ == "__main__":
    main()

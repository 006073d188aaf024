"""Finite-``D`` posterior errors against the state evolution as ``D`` grows
(``benchmarks/posterior_state_evolution.py``, docs/posterior.md "Against the state evolution").

:func:`exact_teacher_errors` samples the posterior of one exact teacher (``|k*|^2 = |v*|^2 = D``,
``k* ⟂ v*``) and measures both predictors' unbiased errors; :func:`state_evolution_gap` averages
them over teachers at each ``D`` and fits the gap to the theory against ``1/D``
(:func:`fit_against_inverse_D`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from bayes_slr.errors import check_int
from bayes_slr.inference.predictive import posterior_errors
from bayes_slr.inference.samplers import sample_posterior
from bayes_slr.models.simulate import draw_teacher, simulate
from bayes_slr.models.spec import SLRConfig, training_size


def exact_teacher_errors(
    config: SLRConfig,
    alpha: float,
    seed: int,
    *,
    chains: int = 4,
    warmup: int = 300,
    samples: int = 300,
    N_test: int = 10_000,
    max_draws: int = 200,
) -> dict[str, float]:
    """One exact teacher (``|k*|^2 = |v*|^2 = D``, ``k* ⟂ v*``) and its posterior
    (``sampler="auto"``,
    random starts): unbiased errors of the Bayes-optimal and plain predictors."""
    key_teacher, key_data, key_sampler, key_test = jax.random.split(jax.random.PRNGKey(seed), 4)
    teacher = draw_teacher(key_teacher, config.D, exact=True)
    batch = simulate(key_data, config, teacher, training_size(alpha, config.D))
    draws = sample_posterior(
        key_sampler, config, batch, chains=chains, warmup=warmup, samples=samples
    )
    errors = posterior_errors(
        key_test, config, teacher, draws.k, draws.v, N_test=N_test, max_draws=max_draws
    )
    return {"bayes": errors.bayes.value, "plain": errors.plain.value}


def fit_against_inverse_D(
    sizes: Sequence[int], gaps: Sequence[float], stderrs: Sequence[float]
) -> dict[str, float]:
    """Weighted least squares ``gap = a + b / D``; ``a`` is the residual at ``D -> inf``.

    Returns ``a``, ``b`` and their standard errors (from the stated standard errors of the
    gaps; with two sizes the fit is exact and the errors are propagated the same way).
    """
    D = np.asarray(sizes, float)
    design = np.stack([np.ones_like(D), 1.0 / D], axis=1)
    weights = 1.0 / np.asarray(stderrs, float) ** 2
    covariance = np.linalg.inv(design.T @ (weights[:, None] * design))
    a, b = covariance @ design.T @ (weights * np.asarray(gaps, float))
    return {
        "intercept": float(a),
        "intercept_stderr": float(np.sqrt(covariance[0, 0])),
        "slope": float(b),
        "slope_stderr": float(np.sqrt(covariance[1, 1])),
    }


def state_evolution_gap(
    config: SLRConfig,
    alpha: float,
    sizes: Sequence[int],
    teachers: int,
    *,
    theory_samples: int = 16384,
    theory_seeds: int = 4,
    seed: int = 1000,
    **sampling: Any,
) -> dict[str, Any]:
    """Sampler errors minus the state evolution's, averaged over exact teachers, at each ``D``,
    fitted against ``1/D``.

    ``bayes`` (weighted predictor) is compared with the theory's ``test_error``, ``plain`` with
    its ``posterior_mean_f_error``. Standard errors: over teachers, combined with the theory's
    seed-to-seed spread (``theory_seeds`` sets of ``theory_samples`` draws).
    """
    from bayes_slr.formulas.replica_bayes import bayes_replica_point

    check_int("teachers", teachers, 2)
    theory = {"bayes": [], "plain": []}
    for theory_seed in range(theory_seeds):
        point = bayes_replica_point(
            config, alpha=alpha, mc_samples=theory_samples, seed=theory_seed
        )
        theory["bayes"].append(point.test_error)
        theory["plain"].append(point.diagnostics["posterior_mean_f_error"])
    theory_mean = {name: float(np.mean(values)) for name, values in theory.items()}
    theory_se = {
        name: float(np.std(values, ddof=1) / np.sqrt(len(values))) if len(values) > 1 else 0.0
        for name, values in theory.items()
    }
    rows = []
    for D in sizes:
        measured = [
            exact_teacher_errors(config.replace(D=D), alpha, seed + i, **sampling)
            for i in range(teachers)
        ]
        row = {"D": D, "teachers": teachers}
        for name in ("bayes", "plain"):
            values = np.array([m[name] for m in measured])
            se = float(np.hypot(values.std(ddof=1) / np.sqrt(values.size), theory_se[name]))
            row[name] = {
                "measured": float(values.mean()),
                "theory": theory_mean[name],
                "gap": float(values.mean()) - theory_mean[name],
                "stderr": se,
            }
        rows.append(row)
    fits = {
        name: fit_against_inverse_D(
            [r["D"] for r in rows],
            [r[name]["gap"] for r in rows],
            [r[name]["stderr"] for r in rows],
        )
        for name in ("bayes", "plain")
    }
    return {"config": config.to_dict(), "alpha": alpha, "rows": rows, "fit": fits}

"""The rows of the ``theory`` curves (docs/theory.md): the ridge-ERM equations, the Bayes-optimal
fixed points (``bayes`` and ``amp``), L-BFGS simulations at a fixed ``sqrt(N D)`` and the
population (``alpha -> inf``) values; each a :class:`~bayes_slr.studies.theory_records.TheoryRow`.
"""

from __future__ import annotations

import functools
import math
from typing import Any

from bayes_slr.models.spec import SLRConfig
from bayes_slr.studies.theory_records import (
    BAYES_ESTIMATORS,
    BayesBranchDiagnostics,
    PopulationDiagnostics,
    SimulationDiagnostics,
    TheoryRow,
    TheorySettings,
)

SIMULATION_TEST_SEQUENCES = 10_000


def theory_row(config: SLRConfig, settings: TheorySettings, seed: int) -> TheoryRow:
    """One row, ``settings``' point: the equations (``source`` ``theory``), an L-BFGS simulation
    (``simulation``) or the population value (``population``) of ``estimator`` (an activation,
    ``bayes`` or ``amp``) at ``alpha`` from ``init``."""
    source, alpha, estimator, init = (
        settings.source,
        settings.alpha,
        settings.estimator,
        settings.init,
    )
    assert alpha is not None and estimator is not None, "a row's settings name its point"
    if source == "simulation":
        return _simulation_row(config, alpha, estimator, settings, seed)
    if source == "population":
        return _population_row(config, estimator)
    if estimator in BAYES_ESTIMATORS:
        return _bayes_branch_row(config, alpha, estimator, settings, seed)
    from bayes_slr.formulas.replica_erm import erm_replica_point
    from bayes_slr.formulas.result import REPLICA_MAX_DRAWS

    solved = erm_replica_point(
        config,
        estimator,
        alpha=alpha,
        lam=settings.lam,
        init=init,
        mc_samples=settings.channel_draws,
        replicates=settings.replicates,
        seed=seed,
        target_stderr=settings.target_stderr,
        max_samples=max(REPLICA_MAX_DRAWS, settings.channel_draws),
    )
    return TheoryRow(
        source="theory",
        alpha=float(solved.alpha),
        estimator=solved.estimator,
        init=solved.init,
        test_error=float(solved.test_error),
        stderr=float(solved.stderr),
        overlaps={name: float(value) for name, value in solved.overlaps.items()},
        converged=bool(solved.converged),
        diagnostics=solved.diagnostics,
    )


@functools.lru_cache(maxsize=4)
def _branches(config: SLRConfig, alpha: float, mc_samples: int, seed: int) -> Any:
    """:func:`~bayes_slr.formulas.phase.bayes_branches` at ``alpha`` (kept for the other row of the
    same ``alpha``, solved next in the same process)."""
    from bayes_slr.formulas.bayes_channel import BayesChannel
    from bayes_slr.formulas.phase import bayes_branches

    channel = BayesChannel(config, mc_samples=mc_samples, seed=seed)
    return bayes_branches(config, alpha, channel=channel), channel


def _bayes_branch_row(
    config: SLRConfig, alpha: float, estimator: str, settings: TheorySettings, seed: int
) -> TheoryRow:
    """The ``bayes`` row (the fixed point of largest free entropy, with ``I / D``) or the ``amp``
    row (the fixed point from the uninformative start) at one ``alpha``."""
    branches, channel = _branches(config, alpha, settings.channel_draws, seed)
    bayes = estimator == "bayes"
    branch = branches.bayes_optimal if bayes else "uninformative"
    fixed = branches.bayes if bayes else branches.amp
    solved = fixed.point
    information = (
        (branches.mutual_information, branches.mutual_information_stderr)
        if bayes
        else (math.nan, math.nan)
    )
    return TheoryRow(
        source="theory",
        alpha=alpha,
        estimator=estimator,
        init="informed" if branch == "informed" else "random",
        test_error=float(fixed.test_error),
        stderr=float(fixed.test_error_stderr),
        overlaps={"q_k": float(solved.q_k), "q_v": float(solved.q_v)},
        converged=bool(solved.converged) and math.isfinite(fixed.test_error),
        diagnostics=BayesBranchDiagnostics(
            residual=float(solved.residual),
            evaluations=int(solved.evaluations),
            spectral_radius=float(solved.spectral_radius),
            branch=branch,
            free_entropy=float(fixed.free_entropy.value),
            free_entropy_stderr=float(fixed.free_entropy.stderr),
            mutual_information=float(information[0]),
            mutual_information_stderr=float(information[1]),
            test_error_stderr=float(fixed.test_error_stderr),
            distinct=bool(branches.distinct),
            hard_phase=bool(branches.hard_phase),
            certain=bool(branches.certain),
            method=channel.method,
            mc_samples=int(channel.mc_samples),
        ),
    )


def _simulation_row(
    config: SLRConfig, alpha: float, activation: str, settings: TheorySettings, seed: int
) -> TheoryRow:
    """L-BFGS ERM from random starts at ``D = settings.dimension(alpha)``, exact teachers: the
    mean over teachers, its standard error (spread over training sets included), mean overlaps."""
    from bayes_slr.attention.erm_settings import ERMSettings
    from bayes_slr.models.spec import training_size
    from bayes_slr.studies.erm import erm_study

    D = settings.dimension(alpha)
    erm = ERMSettings(
        activation=activation,
        alpha=alpha,
        lam=settings.lam,
        seeds=settings.seeds,
        N_test=SIMULATION_TEST_SEQUENCES,
        exact_teacher=True,
        predict_population=False,
    )
    summary = erm_study(config.replace(D=D), erm, seed)
    per_seed = [s.overlaps.to_dict() for s in summary.per_seed]
    overlaps = {name: sum(s[name] for s in per_seed) / settings.seeds for name in per_seed[0]}
    return TheoryRow(
        source="simulation",
        alpha=alpha,
        estimator=activation,
        init="random",
        test_error=summary.test_error,
        stderr=summary.stderr,
        overlaps=overlaps,
        converged=all(s.converged for s in summary.per_seed),
        diagnostics=SimulationDiagnostics(
            stderr=summary.stderr,
            D=D,
            N=training_size(alpha, D),
            seeds=settings.seeds,
            per_seed_test_error=tuple(s.test_error for s in summary.per_seed),
            iterations=max(s.iterations for s in summary.per_seed),
            lam=settings.lam,
        ),
    )


def _population_row(config: SLRConfig, estimator: str) -> TheoryRow:
    """The ``alpha -> inf`` value of ``estimator``: the population Bayes error, or the
    activation's population-optimal error (its large-norm limit where it has no finite
    optimum)."""
    if estimator == "bayes":
        from bayes_slr.formulas.bayes import bayes_error_exact

        exact = bayes_error_exact(config)
        error, stderr, overlaps = exact.value, 0.0, {"q_k": 1.0, "q_v": 1.0}
        diagnostics = PopulationDiagnostics(float(exact.error_bound), "")
    else:
        from bayes_slr.formulas.optimum import optimal_population_error

        optimum = optimal_population_error(estimator, config)
        error, stderr = optimum.error, None
        overlaps = {name: getattr(optimum.overlaps, name) for name in ("m_k", "q_k", "m_v", "q_v")}
        diagnostics = PopulationDiagnostics(None, optimum.overlaps.note)
    return TheoryRow(
        source="population",
        alpha=math.inf,
        estimator=estimator,
        init="random",
        test_error=float(error),
        stderr=stderr,
        overlaps=overlaps,
        converged=True,
        diagnostics=diagnostics,
    )

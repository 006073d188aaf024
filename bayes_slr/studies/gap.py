"""The points of ``gap``: the population Bayes error and an activation's population optimum of a
task, how one ERM point is trained and scored, the oracle beside it, and the paired differences on
held-out sequences.

An ERM point trains attention by :func:`~bayes_slr.studies.erm.erm_study` on ``seeds`` drawn
teachers at ``alpha``, or on a data file (one training set: the whole file when it holds its
teacher, else the part not held out), and scores it on fresh sequences of each teacher beside the
zero predictor and the oracle (the teacher's own Bayes predictor, on the same sequences), or on
the held-out sequences. The computing layers are imported inside the functions, so the module
imports without JAX.

The population answers of one task (the ``multihead`` command's row per presence,
:func:`population_row`, docs/multihead.md sections 3 to 6) are the same population points, one
head or several: the Bayes error with known directions (:func:`bayes_point`) and each
activation's optimum of ``H`` student heads aligned one to one with the teacher's
(:func:`population_point`), each by quadrature, with a Monte Carlo check of each (mean and
standard error).

An aligned optimum is an optimum over all overlaps when there is one head (nothing else to
align with) or when it equals the Bayes error (which no estimator beats); otherwise it is an
upper bound: heads that mix teacher heads may do better (docs/multihead.md section 6), and the
optimum over all overlaps is searched beside it
(:func:`~bayes_slr.formulas.all_overlaps.all_overlaps_optimum`).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bayes_slr.attention.erm_settings import ERMSettings
from bayes_slr.formulas.optimum_record import AllOverlapsOptimum, PopulationOptimum
from bayes_slr.models.spec import SLRConfig
from bayes_slr.numerics.paired import PairedDifference
from bayes_slr.studies.erm_records import ERMSeed
from bayes_slr.studies.gap_records import (
    ALL_OVERLAPS,
    UPPER_BOUND,
    ActivationOptimum,
    BayesValue,
    ERMError,
    Estimate,
    FittedParameters,
    MonteCarloCheck,
    MultiHeadPopulationRow,
    PopulationSettings,
    TeacherErrors,
)


def bayes_point(config: SLRConfig) -> BayesValue:
    """The population Bayes error with known directions and its quadrature bound (of a
    multi-head task: docs/multihead.md section 2)."""
    from bayes_slr.formulas.bayes import bayes_error_exact

    exact = bayes_error_exact(config)
    return BayesValue(float(exact.value), float(exact.error_bound))


def population_point(
    config: SLRConfig, activation: str, student_heads: int | None = None
) -> PopulationOptimum:
    """The population-optimal error of one activation, with its optimal overlaps and note; on a
    multi-head task, or with ``student_heads`` other than the task's heads, the optimum of
    ``student_heads`` heads aligned one to one with the teacher's (extra heads silenced; each
    head at the overlaps of the optimum of ``H`` aligned heads, docs/multihead.md section 6)."""
    from bayes_slr.formulas.optimum import heads_at_optimum, optimal_population_error

    optimum = optimal_population_error(activation, config)
    if student_heads in (None, config.heads):
        return optimum
    heads = heads_at_optimum(optimum, config, student_heads)
    return PopulationOptimum(heads.error, optimum.overlaps)


@dataclasses.dataclass(frozen=True)
class DataSplit:
    """The data file of an ERM point split by a seed: its teacher (``None`` without one), the
    training set and the held-out set (``None`` with a teacher: fresh sequences test)."""

    teacher: Any
    train: Any
    test: Any


def data_split(path: Path, holdout: float, seed: int) -> DataSplit:
    """The data file ``path`` split by ``seed``: ``holdout`` of it held out without a teacher."""
    from bayes_slr.models.dataset import load_dataset, training_and_test

    train, test = training_and_test(load_dataset(path, heads=True), holdout, seed)
    return DataSplit(train.teacher, train.as_batch(), None if test is None else test.as_batch())


def erm_point(
    config: SLRConfig, settings: ERMSettings, seed: int, split: DataSplit | None
) -> tuple[ERMError, Estimate | None]:
    """The ERM test error of ``settings.activation`` (``seeds`` drawn teachers at
    ``settings.alpha``, or the data file's ``split`` with ``alpha`` left out), and the oracle on
    the same test sequences (``None`` without a teacher).

    Mean and standard error over seeds of the lowest-training-loss random start
    (:func:`~bayes_slr.studies.erm.erm_study`, scored on ``N_test`` fresh sequences of
    each teacher, or on the held-out part of a data file without one: then the selected fit is
    kept to compare the activations on the same sequences, :func:`held_out_differences`).
    """
    from bayes_slr.studies.erm import erm_study

    summary = erm_study(
        config,
        settings,
        seed,
        data=None if split is None else (split.teacher, split.train),
        test_set=None if split is None else split.test,
    )
    per_seed = summary.per_seed
    teachers = teacher_errors(per_seed)
    minus_zero = teachers.minus_zero_difference()
    held_out = split is not None and split.test is not None
    fit = (
        FittedParameters.of(*(np.asarray(leaf[0], dtype=float) for leaf in summary.params))
        if held_out
        else None
    )
    erm = ERMError(
        test_error=summary.test_error,
        stderr=summary.stderr,
        lam=summary.lam,
        lam_auto=settings.lam_auto,
        restarts_agree=summary.restarts_agree,
        start_spread=max(r.start_spread for r in per_seed),
        converged=all(r.converged for r in per_seed),
        informed_test_error=summary.informed_test_error,
        zero_error=summary.zero_error,
        # paired with the test error (same teachers and test sequences)
        excess_over_zero=minus_zero.value,
        excess_over_zero_stderr=minus_zero.stderr,
        notes=summary.notes,
        fit=fit,
        teachers=teachers,
        heads=None
        if per_seed[0].head_overlaps is None
        else tuple(r.head_overlaps for r in per_seed),
    )
    oracle = (
        None
        if summary.oracle_error is None
        else Estimate(summary.oracle_error, summary.oracle_stderr)
    )
    return erm, oracle


def teacher_errors(per_seed: Sequence[ERMSeed]) -> TeacherErrors:
    """The per-teacher figures of an ERM point from its seeds' records (with their paired
    differences to the zero predictor and the oracle, :func:`~bayes_slr.studies.erm.erm_study`)."""
    zero = [_pair(r.minus_zero) for r in per_seed]
    has_oracle = all(r.oracle is not None for r in per_seed)
    oracle = [_pair(r.minus_oracle) for r in per_seed] if has_oracle else None
    return TeacherErrors(
        test_error=tuple(r.test_error for r in per_seed),
        stderr=tuple(r.stderr for r in per_seed),
        zero_error=tuple(r.zero_error for r in per_seed),
        zero_stderr=tuple(r.zero_stderr for r in per_seed),
        minus_zero=tuple(value for value, _ in zero),
        minus_zero_stderr=tuple(stderr for _, stderr in zero),
        oracle_error=tuple(r.oracle.test_error for r in per_seed) if has_oracle else None,
        oracle_stderr=tuple(r.oracle.stderr for r in per_seed) if has_oracle else None,
        minus_oracle=None if oracle is None else tuple(value for value, _ in oracle),
        minus_oracle_stderr=None if oracle is None else tuple(stderr for _, stderr in oracle),
    )


def _pair(difference: PairedDifference | None) -> tuple[float, float]:
    """A per-sequence paired difference as ``(value, stderr)`` (every scored seed has one)."""
    if difference is None:
        raise ValueError("a seed scored without its paired differences")
    return difference.value, difference.stderr


def held_out_differences(
    config: SLRConfig, fits: dict[str, FittedParameters], test: Any
) -> dict[str, PairedDifference]:
    """Paired differences of the ERM errors of every two activations' ``fits`` (in their order)
    on the held-out sequences ``test``.

    The fits stored by :func:`erm_point` are scored together on the held-out sequences
    (:func:`~bayes_slr.models.scoring.held_out_error` with ``pairs``): each difference ``a - b``
    (``a`` before ``b``) is the mean of the per-sequence difference of the two errors, its
    ``stderr`` that difference's standard error over the sequences (``n = 1`` data set).
    """
    import jax.numpy as jnp

    from bayes_slr.attention.estimators import AttentionParams, attention_predictor
    from bayes_slr.models.scoring import difference_name, held_out_error

    predictors = {
        a: attention_predictor(AttentionParams(*(jnp.asarray(x) for x in fit.arrays())), a)
        for a, fit in fits.items()
    }
    pairs = list(itertools.combinations(fits, 2))
    errors = held_out_error(
        config,
        test,
        lambda X, lengths: {a: f(X, lengths) for a, f in predictors.items()},
        pairs=pairs,
    )
    return {
        difference_name(a, b): PairedDifference(
            errors[difference_name(a, b)].value, errors[difference_name(a, b)].stderr, 1
        )
        for a, b in pairs
    }


BAYES_MATCH = 1e-6
"""An aligned optimum within this of the Bayes error is the Bayes error (their quadratures agree
to about ``1e-9``), hence the optimum over all overlaps."""


def optimum_scope(
    config: SLRConfig, error: float, bayes_error: float, student_heads: int | None = None
) -> str:
    """:data:`ALL_OVERLAPS` for one student head on one teacher head or an optimum at the Bayes
    error, else :data:`UPPER_BOUND` (``student_heads``: the student's ``H_s``, by default the
    teacher's ``H``)."""
    if config.heads == (student_heads or config.heads) == 1 or error - bayes_error <= BAYES_MATCH:
        return ALL_OVERLAPS
    return UPPER_BOUND


def _bayes_mc(config: SLRConfig, sequences: int, seed: int) -> MonteCarloCheck:
    """The Bayes error with known directions by Monte Carlo over the heads' scores."""
    import jax

    from bayes_slr.inference.bayes_risk import bayes_risk_mc

    estimate = bayes_risk_mc(config, sequences, jax.random.PRNGKey(seed)).bayes_error
    return MonteCarloCheck(float(estimate.mean), float(estimate.stderr), int(estimate.count))


def _optimum_mc(
    activation: str, config: SLRConfig, optimum: PopulationOptimum, sequences: int, seed: int
) -> MonteCarloCheck:
    """The error of ``H`` aligned heads at the optimum's overlaps by Monte Carlo."""
    from bayes_slr.formulas.population_mc import population_error_mc

    o = optimum.overlaps
    estimate = population_error_mc(
        activation, config, o.m_k, o.q_k, o.m_v, o.q_v, o.c, samples=sequences, seed=seed
    )
    return MonteCarloCheck(float(estimate.mean), float(estimate.stderr), int(estimate.count))


def _all_overlaps(
    activation: str, config: SLRConfig, settings: PopulationSettings, seed: int
) -> AllOverlapsOptimum:
    """The optimum of ``H`` student heads over all overlaps, by search and paired check."""
    from bayes_slr.formulas.all_overlaps import all_overlaps_optimum

    return all_overlaps_optimum(
        activation,
        config,
        config.heads,
        settings.search_sequences,
        settings.check_sequences,
        seed,
    )


def population_row(
    config: SLRConfig, settings: PopulationSettings, seed: int
) -> MultiHeadPopulationRow:
    """The Bayes error and each activation's aligned optimum of ``config``, with their Monte
    Carlo checks.

    Parameters
    ----------
    config : the task (``heads``, ``presence``, variant, length law, ``nu``); ``D`` and
        ``Delta`` are ignored.
    settings : the activations, the size of each Monte Carlo check (0: none) and of the search
        over all overlaps where an aligned optimum is an upper bound (0: none).
    seed : seed of every Monte Carlo check (the same sequences for every activation).

    Returns
    -------
    MultiHeadPopulationRow
        The Bayes error (quadrature, its bound, Monte Carlo) and per activation its optimum,
        overlaps, scope, Monte Carlo check and optimum over all overlaps.
    """
    bayes = bayes_point(config)
    checks = settings.mc_sequences > 0
    optima = []
    for activation in settings.activations:
        optimum = population_point(config, activation)
        scope = optimum_scope(config, optimum.error, bayes.error)
        optima.append(
            ActivationOptimum(
                activation,
                float(optimum.error),
                optimum.overlaps,
                scope,
                _optimum_mc(activation, config, optimum, settings.mc_sequences, seed)
                if checks
                else None,
                _all_overlaps(activation, config, settings, seed)
                if scope == UPPER_BOUND and settings.search_sequences > 0
                else None,
            )
        )
    return MultiHeadPopulationRow(
        config.variant,
        config.Lbar,
        not config.length.is_fixed,
        config.nu,
        config.heads,
        config.presence,
        bayes.error,
        bayes.error_bound,
        _bayes_mc(config, settings.mc_sequences, seed) if checks else None,
        tuple(optima),
    )

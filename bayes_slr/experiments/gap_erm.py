"""The ERM columns of ``gap``: the typed ERM error of one activation, how one ERM point is
trained and scored, the oracle beside it, and the paired differences on held-out sequences.

An ERM point trains attention by :func:`~bayes_slr.studies.erm.erm_study` on
``seeds`` drawn teachers at the options' ``alpha``, or on a data file (one training set: the
whole file when it holds its teacher, else the part not held out), and scores it on fresh
sequences of each teacher beside the zero predictor and the oracle (the teacher's own Bayes
predictor, on the same sequences), or on the held-out sequences. The computing layers are
imported inside the functions, so the module imports without JAX.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from typing import Any

import numpy as np

from bayes_slr.experiments.gap_records import (
    ERMError,
    Estimate,
    FittedParameters,
    GapOptions,
    GapRow,
)
from bayes_slr.experiments.task import task_config
from bayes_slr.models.spec import SLRConfig


def erm_warnings(activation: str, erm: ERMError, population: float | None) -> list[str]:
    """Why an ERM number is not to be read as it stands: its own notes (disagreeing starts, no
    convergence, a ridge at the grid's edge), and a test error above the zero predictor's."""
    warnings = [f"ERM {activation}: {sentence}" for sentence in erm.notes]
    if erm.above_zero:
        reason = (
            f"its population optimum is {population:.3g} (zero predictor: 1), and the estimation "
            f"error of 2D parameters from N = alpha D samples exceeds that margin"
            if population is not None
            else "no better estimator was found"
        )
        warnings.append(
            f"ERM {activation}: test error {erm.test_error:.3g} is above the zero predictor's "
            f"{erm.zero_error:.3g} (on the same test sequences) by {erm.excess_over_zero:.3g} "
            f"+- {erm.excess_over_zero_stderr:.2g}: {reason}"
        )
    return warnings


def erm_point(
    config: SLRConfig, activation: str, options: GapOptions
) -> tuple[ERMError, Estimate | None]:
    """The ERM test error of one activation (drawn teachers, or the data file), and the oracle on
    the same test sequences (``None`` without a teacher).

    Mean and standard error over seeds of the lowest-training-loss random start
    (:func:`~bayes_slr.studies.erm.erm_study`, scored on ``N_test`` fresh sequences of
    each teacher, or on the held-out part of a data file without one: then the selected fit is
    kept to compare the activations on the same sequences, :func:`held_out_differences`).
    """
    from bayes_slr.studies.erm import erm_study

    teacher, train, test = _training_data(options)
    settings = options.erm_settings()
    summary = erm_study(
        config.replace(D=options.D, Delta=options.Delta),
        activation,
        settings=settings,
        seed=options.seed,
        alpha=options.training_ratio() if train is None else None,
        data=None if train is None else (teacher, train),
        test_set=test,
    )
    per_seed = summary.per_seed
    zero_diffs = [r.test_error - r.zero_error for r in per_seed]
    k, v, c = (np.asarray(leaf[0], dtype=float) for leaf in summary.params)
    fit = None if test is None else FittedParameters(tuple(k.tolist()), tuple(v.tolist()), float(c))
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
        # paired with the test error (same test samples): the spread over seeds of the difference
        excess_over_zero=sum(zero_diffs) / len(zero_diffs),
        excess_over_zero_stderr=_paired_stderr(zero_diffs, [r.stderr for r in per_seed]),
        notes=summary.notes,
        fit=fit,
    )
    oracle = (
        None
        if summary.oracle_error is None
        else Estimate(summary.oracle_error, summary.oracle_stderr)
    )
    return erm, oracle


def _training_data(options: GapOptions) -> tuple[Any, Any, Any]:
    """``(teacher, training set, held-out set)`` of the data file split by ``options.seed``, or
    ``(None, None, None)`` for drawn data (the held-out set is ``None`` with a teacher)."""
    if options.data is None:
        return None, None, None
    from bayes_slr.models.dataset import load_dataset, training_and_test

    train, test = training_and_test(load_dataset(options.data), options.holdout, options.seed)
    return train.teacher, train.as_batch(), None if test is None else test.as_batch()


def held_out_differences(options: GapOptions, row: GapRow) -> dict[str, Estimate] | None:
    """Paired differences of the ERM errors of a data row without a teacher, between every two
    activations, on its held-out sequences.

    The fits stored by :func:`erm_point` are scored together on the held-out sequences of the
    seed's split (:func:`~bayes_slr.models.scoring.held_out_error` with ``pairs``): each
    difference ``a - b`` (``a`` before ``b`` in the activations) is the mean of the per-sequence
    difference of the two errors, its ``stderr`` that difference's standard error over the
    sequences. ``None`` when a fit is missing (a teacher: errors on fresh sequences; a failed
    point).
    """
    fits = {a: (row.erm or {}).get(a) for a in options.activations}
    if any(part is None or part.fit is None for part in fits.values()):
        return None
    import jax.numpy as jnp

    from bayes_slr.attention.estimators import AttentionParams, attention_predictor
    from bayes_slr.models.scoring import difference_name, held_out_error

    predictors = {
        a: attention_predictor(
            AttentionParams(*(jnp.asarray(value) for value in dataclasses.astuple(part.fit))), a
        )
        for a, part in fits.items()
    }
    pairs = list(itertools.combinations(options.activations, 2))
    config = task_config(row.variant, row.L, row.variable_length, row.nu, options.Delta, options.D)
    errors = held_out_error(
        config,
        _training_data(options)[2],
        lambda X, lengths: {a: f(X, lengths) for a, f in predictors.items()},
        pairs=pairs,
    )
    return {
        difference_name(a, b): Estimate(
            errors[difference_name(a, b)].value, errors[difference_name(a, b)].stderr
        )
        for a, b in pairs
    }


def _paired_stderr(diffs: list[float], stderrs: list[float]) -> float:
    """Standard error of the mean of per-seed differences (one seed: its Monte Carlo error as a
    bound)."""
    n = len(diffs)
    if n == 1:
        return float(stderrs[0])
    mean = sum(diffs) / n
    return math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1) / n)

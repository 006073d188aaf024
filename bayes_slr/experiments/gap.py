"""Gap to Bayes across sequence lengths: the project's main measurement.

For one task (variant, nu, length law) a *gap point* holds the population Bayes error,
each activation's population-optimal error (docs/model.md sections 2 and 4) and, when a
sample ratio ``alpha`` is given, the ERM test error of each activation at finite data
(section 5). :func:`gap_sweep` runs a grid of lengths, resumable through a
:class:`~bayes_slr.records.SweepLog`.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from collections.abc import Iterable
from typing import Any

import jax.numpy as jnp
import numpy as np

from bayes_slr.attention.activations import check_activation
from bayes_slr.attention.estimators import AttentionParams, attention_predictor
from bayes_slr.attention.training import OPTIMIZERS
from bayes_slr.errors import ConfigError, check_choice, check_int, check_real
from bayes_slr.experiments.erm import (
    DEFAULT_LAM_GRID,
    DEFAULT_STARTS,
    LAM_AUTO,
    check_lam,
    erm_experiment,
)
from bayes_slr.models.dataset import DEFAULT_HOLDOUT, load_dataset, training_and_test
from bayes_slr.models.scoring import difference_name, held_out_error
from bayes_slr.models.spec import INITS, LengthLaw, SLRConfig
from bayes_slr.models.variants import get_variant, variant_names
from bayes_slr.records import Executor, SweepLog, run_sweep
from bayes_slr.theory.bayes import bayes_error_exact
from bayes_slr.theory.optimum import optimal_population_error

DEFAULT_SETTINGS = tuple((name, get_variant(name).default_nu) for name in variant_names())
"""Every registered variant at its default ``nu`` (max-SLR at ``nu = inf``, spiked at ``nu = 2``).
"""
DEFAULT_LENGTHS = (2, 3, 5, 10, 30, 100)


@dataclasses.dataclass(frozen=True)
class ERMOptions:
    """Finite-data training settings for the ERM columns (docs/model.md section 5).

    ``lam="auto"`` (default) chooses the ridge per seed by held-out validation on
    :data:`~bayes_slr.experiments.erm.DEFAULT_LAM_GRID`; ``Delta`` is the label noise of
    the ERM training data (the reported error is the excess over it); ``starts`` random
    starts per training set, plus the informed start as a reference
    (:func:`~bayes_slr.experiments.erm.erm_experiment`).

    ``data``: the path of a user's data set (:mod:`bayes_slr.models.dataset`) to train on
    instead of drawing teachers and data: then ``seeds`` must be 1 (one data set; the seed
    chooses the held-out split and the random starts), ``D`` and ``alpha`` are the data's
    (``alpha`` = training sequences / ``D``), and without a teacher in the file a share
    ``holdout`` of the sequences is the test set. ``data_digest`` (the file's SHA-256) makes
    a changed file a new point of a resumable log.
    """

    alpha: float
    lam: float | str = LAM_AUTO
    D: int = 100
    seeds: int = 4
    init: str = "random"
    optimizer: str = "lbfgs"
    N_test: int = 20_000
    Delta: float = 0.0
    starts: int = DEFAULT_STARTS
    lam_grid: tuple[float, ...] = DEFAULT_LAM_GRID  # part of a point's identity in a resumable log
    data: str | None = None
    holdout: float = DEFAULT_HOLDOUT
    data_digest: str | None = None

    def __post_init__(self) -> None:
        check_real("alpha", self.alpha, minimum=0.0, strict=True)
        check_lam(self.lam)
        check_int("D", self.D, 1)
        check_int("seeds", self.seeds, 1)
        check_int("N_test", self.N_test, 2)
        check_real("Delta", self.Delta, minimum=0.0)
        check_int("starts", self.starts, 1)
        object.__setattr__(
            self, "lam_grid", tuple(check_real("lam_grid", x, minimum=0.0) for x in self.lam_grid)
        )
        check_choice("init", self.init, INITS)
        check_choice("optimizer", self.optimizer, OPTIMIZERS)
        if self.data is not None and self.seeds != 1:
            raise ConfigError(
                f"seeds must be 1 with --data (one data set: --seed chooses the held-out split "
                f"and the "
                f"random starts), got {self.seeds}"
            )


def task_config(
    variant: str, nu: float, L: int, variable_length: bool, D: int = 1, Delta: float = 0.0
) -> SLRConfig:
    """The task of one gap row: fixed length ``L``, or uniform on ``{1..L}``."""
    length = LengthLaw.uniform(L) if variable_length else LengthLaw.fixed(L)
    return SLRConfig(variant, D, length, nu, Delta)


def population_point(config: SLRConfig, activation: str) -> dict[str, Any]:
    """Population-optimal error of one activation, with its optimal overlaps and note."""
    optimum = optimal_population_error(activation, config)
    return optimum._asdict()


def bayes_point(config: SLRConfig) -> dict[str, Any]:
    """Population Bayes error with its quadrature bound."""
    exact = bayes_error_exact(config)
    return {"error": exact.value, "error_bound": exact.error_bound}


def erm_point(config: SLRConfig, activation: str, options: ERMOptions, seed: int) -> dict[str, Any]:
    """ERM test error of one activation at ``options.alpha``: mean and standard error over seeds
    of the lowest-training-loss random start, with the diagnostics of
    :func:`~bayes_slr.experiments.erm.erm_experiment`.

    Returns ``test_error``, ``stderr``, ``lam`` (per seed; chosen when ``options.lam`` is
    ``"auto"``), ``restarts_agree``, ``start_spread`` (largest over seeds), ``converged``
    (every seed), ``informed_test_error`` (reference), ``zero_error`` (the zero predictor on
    the same test samples) and ``zero_stderr``, ``notes``, ``fit``. With ``options.data`` the one
    training set
    is the user's (:func:`_training_data`), scored on fresh sequences of its teacher or, without
    one, on its held-out part (``informed_test_error`` is then ``None``, and ``fit`` holds the
    selected ``k, v, c`` for :func:`held_out_differences`; else ``fit`` is ``None``).
    """
    data = _training_data(options, seed)
    summary = erm_experiment(
        config.replace(D=options.D, Delta=options.Delta),
        activation,
        **data,
        lam=options.lam,
        seeds=options.seeds,
        seed=seed,
        init=options.init,
        starts=options.starts,
        lam_grid=options.lam_grid,
        optimizer=options.optimizer,
        N_test=options.N_test,
        predict_population=False,
    )
    per_seed = summary.per_seed
    zero_diffs = [r["test_error"] - r["zero_error"] for r in per_seed]
    fit = (
        None
        if data.get("test_set") is None
        else {name: np.asarray(leaf[0]).tolist() for name, leaf in summary.params._asdict().items()}
    )
    return {
        "test_error": summary.test_error,
        "stderr": summary.stderr,
        "lam": list(summary.lam),
        "lam_auto": options.lam == LAM_AUTO,
        "restarts_agree": summary.restarts_agree,
        "start_spread": max(r["start_spread"] for r in per_seed),
        "converged": all(r["converged"] for r in per_seed),
        "informed_test_error": summary.informed_test_error,
        "zero_error": summary.zero_error,
        # paired with the test error (same test samples): the spread over seeds of the difference
        "excess_over_zero": sum(zero_diffs) / len(zero_diffs),
        "excess_over_zero_stderr": _paired_stderr(zero_diffs, [r["stderr"] for r in per_seed]),
        "notes": list(summary.notes),
        "fit": fit,
    }


def _training_data(options: ERMOptions, seed: int) -> dict[str, Any]:
    """``erm_experiment``'s data arguments: ``alpha`` alone (drawn data), or the user's data set
    split by ``seed``.
    """
    if options.data is None:
        return {"alpha": options.alpha}
    train, test = training_and_test(load_dataset(options.data), options.holdout, seed)
    return {
        "alpha": train.N / train.D,
        "data": (train.teacher, train.as_batch()),
        "test_set": None if test is None else test.as_batch(),
    }


def held_out_differences(
    row: dict[str, Any], activations: tuple[str, ...], options: ERMOptions, seed: int
) -> dict[str, dict[str, float]] | None:
    """Paired differences of the ERM errors of a ``--data`` row between every two activations, on
    its held-out part.

    The fits stored by :func:`erm_point` are scored together on the held-out sequences of
    ``seed``'s split (:func:`~bayes_slr.models.scoring.held_out_error` with ``pairs``): each
    difference ``a - b`` (``a`` before ``b`` in ``activations``) is the mean of the per-sequence
    difference of the two errors, its ``stderr`` that difference's standard error over the
    sequences. ``None`` when a fit is missing (data with a teacher: errors on fresh sequences).
    """
    fits = {a: row["erm"][a].get("fit") for a in activations}
    if any(fit is None for fit in fits.values()):
        return None
    test = _training_data(options, seed)["test_set"]
    predictors = {
        a: attention_predictor(
            AttentionParams(**{name: jnp.asarray(value) for name, value in fit.items()}), a
        )
        for a, fit in fits.items()
    }
    pairs = list(itertools.combinations(activations, 2))
    config = task_config(
        row["variant"], row["nu"], row["L"], row["variable_length"], options.D, options.Delta
    )
    errors = held_out_error(
        config,
        test,
        lambda X, lengths: {a: f(X, lengths) for a, f in predictors.items()},
        pairs=pairs,
    )
    return {difference_name(a, b): errors[difference_name(a, b)].as_dict() for a, b in pairs}


def _paired_stderr(diffs: list[float], stderrs: list[float]) -> float:
    """Standard error of the mean of per-seed differences (one seed: its Monte Carlo error as a
    bound).
    """
    n = len(diffs)
    if n == 1:
        return float(stderrs[0])
    mean = sum(diffs) / n
    return math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1) / n)


def _points(
    settings: Iterable[tuple[str, float]],
    lengths: Iterable[int],
    variable_length: bool,
    activations: tuple[str, ...],
    erm: ERMOptions | None,
) -> list[dict[str, Any]]:
    points = []
    for variant, nu in settings:
        for L in lengths:
            base = {"variant": variant, "nu": nu, "L": L, "variable_length": variable_length}
            points.append({**base, "kind": "bayes"})
            points += [{**base, "kind": "population", "activation": a} for a in activations]
            if erm is not None:
                points += [
                    {**base, "kind": "erm", "activation": a, **dataclasses.asdict(erm)}
                    for a in activations
                ]
    return points


def validate_sweep(
    settings: Iterable[tuple[str, float]],
    lengths: Iterable[int],
    variable_length: bool,
    activations: Iterable[str],
) -> tuple[list[tuple[str, float]], list[int], tuple[str, ...]]:
    """Check every task and activation of a sweep before anything is computed; return
    them as lists.
    """
    settings = [(variant, nu) for variant, nu in settings]
    lengths = [check_int("L", L, 1) for L in lengths]
    activations = tuple(check_activation(a) for a in activations)
    for variant, nu in settings:
        for L in lengths:
            task_config(variant, nu, L, variable_length)
    return settings, lengths, activations


def gap_sweep(
    settings: Iterable[tuple[str, float]] = DEFAULT_SETTINGS,
    lengths: Iterable[int] = DEFAULT_LENGTHS,
    *,
    variable_length: bool = False,
    activations: Iterable[str] = ("softmax", "linear", "erf", "softplus"),
    erm: ERMOptions | None = None,
    seed: int = 0,
    log: SweepLog | None = None,
    executor: Executor | None = None,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Gap rows, one per (variant, nu, L): Bayes, population optima, and optional ERM.

    Parameters
    ----------
    settings : pairs ``(variant, nu)``.
    lengths : ``L`` values (``Lbar`` of the uniform law when ``variable_length``).
    variable_length : lengths uniform on ``{1..L}`` instead of fixed.
    activations : subset of ``softmax, linear, erf, softplus``.
    erm : finite-data settings; None for population values only.
    seed : base seed of the ERM runs.
    log : finished points are read from and appended to it (resumable sweeps).
    executor : how the points are run (:func:`~bayes_slr.records.run_sweep`).
    progress : show a progress bar on stderr.

    Returns
    -------
    list of dict
        ``{"variant", "nu", "L", "variable_length", "bayes", "bayes_error_bound",
        "population": {activation: error}, "gap": {activation: error - bayes},
        "optimal_overlaps": {activation: {...}}, "erm": {activation: {...}}, "notes": [...],
        "warnings": [...]}`` (``erm`` only with ``erm``; its entries: :func:`erm_point`;
        notes and warnings: :func:`row_notes`); with ``erm.data``, ``erm_paired_differences``
        (:func:`held_out_differences`).
    """
    settings, lengths, activations = validate_sweep(settings, lengths, variable_length, activations)
    points = _points(settings, lengths, variable_length, activations, erm)
    results, failed = run_sweep(
        points,
        functools.partial(solve_gap_point, erm=erm, seed=seed),
        log=log,
        seed_of=lambda point: seed if point["kind"] == "erm" else None,
        executor=executor,
        progress=progress,
        description="gap points",
    )
    if failed:
        point, message = failed[0]
        raise RuntimeError(f"point {point} failed: {message}")
    rows = _rows(results, activations)
    if erm is not None and erm.data is not None:
        for row in rows:
            row["erm_paired_differences"] = held_out_differences(row, activations, erm, seed)
    return rows


def solve_gap_point(point: dict[str, Any], *, erm: ERMOptions | None, seed: int) -> dict[str, Any]:
    """The result of one gap point: Bayes error, an activation's population optimum, or its ERM
    error.
    """
    config = task_config(point["variant"], point["nu"], point["L"], point["variable_length"])
    if point["kind"] == "bayes":
        return bayes_point(config)
    if point["kind"] == "population":
        return population_point(config, point["activation"])
    return erm_point(config, point["activation"], erm, seed)


def _rows(
    results: list[tuple[dict[str, Any], dict[str, Any]]], activations: tuple[str, ...]
) -> list[dict[str, Any]]:
    rows: dict[tuple, dict[str, Any]] = {}
    for point, result in results:
        key = (point["variant"], point["nu"], point["L"])
        row = rows.setdefault(
            key,
            {
                "variant": point["variant"],
                "nu": point["nu"],
                "L": point["L"],
                "variable_length": point["variable_length"],
                "population": {},
                "optimal_overlaps": {},
            },
        )
        if point["kind"] == "bayes":
            row["bayes"], row["bayes_error_bound"] = result["error"], result["error_bound"]
        elif point["kind"] == "population":
            row["population"][point["activation"]] = result["error"]
            row["optimal_overlaps"][point["activation"]] = {
                k: v for k, v in result.items() if k != "error"
            }
        else:
            row.setdefault("erm", {})[point["activation"]] = result
    for row in rows.values():
        row["gap"] = {a: row["population"][a] - row["bayes"] for a in activations}
        row["notes"], row["warnings"] = row_notes(row, activations)
    return list(rows.values())


def row_notes(row: dict[str, Any], activations: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """What a reader must know with a row: ``(notes, warnings)``.

    Notes: limits and upper bounds of the population optima (their ``note``), the ridge
    chosen by validation. Warnings (numbers not to read as they stand): random starts that
    disagree, fits that did not converge, an ERM error above the zero predictor's.
    """
    notes, warnings = [], []
    for activation in activations:
        note = row["optimal_overlaps"].get(activation, {}).get("note", "")
        if note:
            kind = (
                "a limit (|k| -> inf)"
                if "no finite optimum" in note
                else ("an upper bound on its optimum" if "boundary" in note else "")
            )
            notes.append(f"population {activation}" + (f" is {kind}" if kind else "") + f": {note}")
    for activation, erm in row.get("erm", {}).items():
        if erm.get("lam_auto"):
            notes.append(
                f"ERM {activation}: lam chosen by held-out validation per seed: "
                + ", ".join(f"{x:.3g}" for x in erm["lam"])
            )
        for sentence in erm.get("notes", []):
            warnings.append(f"ERM {activation}: {sentence}")
        if erm.get("excess_over_zero", -1.0) > 2.0 * erm.get("excess_over_zero_stderr", 0.0):
            population = row["population"].get(activation)
            reason = (
                f"its population optimum is {population:.3g} (zero predictor: 1), and the "
                f"estimation error of "
                f"2D parameters from N = alpha D samples exceeds that margin"
                if population is not None
                else "no better estimator was found"
            )
            warnings.append(
                f"ERM {activation}: test error {erm['test_error']:.3g} is above the zero "
                f"predictor's "
                f"{erm['zero_error']:.3g} (on the same test sequences) by "
                f"{erm['excess_over_zero']:.3g} +- "
                f"{erm['excess_over_zero_stderr']:.2g}: {reason}"
            )
    return notes, warnings

"""The computation of one posterior point (imported by ``posterior`` and ``posterior-sweep`` inside
``solve``: this module imports JAX).

:func:`sample_tree` draws the teacher and ``N = round(alpha D)`` training sequences of the seed (or
takes given ones) and samples the posterior of ``(k*, v*)`` into an ArviZ ``DataTree``;
:func:`summarise` measures everything :class:`~bayes_slr.experiments.posterior_records.
PosteriorSummary` reports; :func:`run_posterior` and :func:`sweep_point` are the two experiments'
points.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jax
import numpy as np
import xarray as xr

from bayes_slr.attention.erm_settings import ERMSettings
from bayes_slr.attention.estimators import AttentionParams, attention_predictor
from bayes_slr.errors import ConfigError
from bayes_slr.experiments.posterior_file import (
    CHECK_GROUP,
    StoredERM,
    point_file,
    settings_record,
    store_erm,
    stored_erm,
)
from bayes_slr.experiments.posterior_options import PosteriorOptions, SamplingOptions
from bayes_slr.experiments.posterior_records import (
    ERM_ACTIVATIONS,
    OVERLAP_AGREEMENT_WARNING,
    START_AGREEMENT_WARNING,
    TEST_SET_FRESH,
    TEST_SET_HELD_OUT,
    DataRun,
    Diagnostic,
    ERMComparison,
    Estimate,
    ImportanceESS,
    PosteriorSummary,
    PredictorError,
    StartCheck,
    posterior_warnings,
)
from bayes_slr.experiments.runner import inner_progress
from bayes_slr.formulas.bayes import bayes_error_exact
from bayes_slr.inference import diagnostics, posterior_io
from bayes_slr.inference.location import known_directions_predictor
from bayes_slr.inference.predictive import posterior_errors, scored_posterior_errors
from bayes_slr.inference.samplers import PosteriorDraws, sample_posterior
from bayes_slr.models.dataset import Dataset, training_and_test
from bayes_slr.models.scoring import (
    ExcessError,
    Predictor,
    Scorer,
    difference_name,
    fresh_sample_scorer,
    held_out_scorer,
    zero_predictor,
)
from bayes_slr.models.simulate import SLRBatch, Teacher, draw_teacher, simulate
from bayes_slr.models.spec import SLRConfig, training_size
from bayes_slr.records import json_ready
from bayes_slr.studies.erm import erm_study, seed_keys

PAIRED_DIFFERENCES = (
    ("bayes", "erm_softmax"),
    ("bayes", "erm_linear"),
    ("erm_softmax", "erm_linear"),
    ("bayes", "zero"),
)
"""Differences reported on held-out sequences (data without a teacher), paired on the same
sequences; the ERM ones only with the ERM comparison. ``bayes`` is the Bayes-optimal predictor,
``erm_<a>`` ERM."""


def run_posterior(options: PosteriorOptions) -> tuple[xr.DataTree, PosteriorSummary]:
    """The posterior of ``posterior``: read from ``source``, sampled on ``data``, or on simulated
    data; its tree (with the ERM fits, :func:`summarise`) and its summary."""
    if options.source is not None:
        tree = posterior_io.load_posterior(options.source)
        return tree, summarise(tree, options)
    if options.data is not None:
        return posterior_on_data(options)
    tree = sample_tree(options.task(), options.alpha, options)
    return tree, summarise(tree, options)


def sweep_point(options: SamplingOptions, alpha: float, folder: Path | None) -> PosteriorSummary:
    """One point of ``posterior-sweep``; with ``folder``, its posterior is written there
    atomically once summarised (:func:`~bayes_slr.experiments.posterior_file.point_file`), so a
    file exists only for a finished point. A file of this very point left by an interrupted
    run (written, not yet logged) is read instead of sampling again."""
    path = None if folder is None else point_file(folder, alpha)
    tree = _earlier_tree(path, options, alpha)
    if tree is None:
        tree = sample_tree(options.task(), alpha, options)
    summary = summarise(tree, options)
    if path is not None:
        posterior_io.save_posterior(tree, path, force=True)
    return summary


def _earlier_tree(path: Path | None, options: SamplingOptions, alpha: float) -> xr.DataTree | None:
    """The posterior at ``path`` if it was sampled with these settings, else ``None``."""
    if path is None or not path.is_file():
        return None
    try:
        tree = posterior_io.load_posterior(path)
    except ConfigError:
        return None
    record = posterior_io.record_of(tree)
    config = options.task()
    expected = json_ready(
        {**config.to_dict(), **settings_record(options, alpha, training_size(alpha, config.D), "")}
    )
    evaluation = ("sampler", "N_test", "max_draws")
    same = record.get("seed") == options.seed and all(
        record["config"].get(name) == value
        for name, value in expected.items()
        if name not in evaluation
    )
    return tree if same else None


def _other_init(init: str) -> str:
    return "informed" if init == "random" else "random"


def sample_tree(
    config: SLRConfig,
    alpha: float,
    options: SamplingOptions,
    *,
    data: tuple[Teacher | None, SLRBatch] | None = None,
    about_data: DataRun | None = None,
) -> xr.DataTree:
    """Draw the teacher and training set of ``options.seed``, sample the posterior, return its
    ArviZ ``DataTree``.

    ``data``: a given ``(teacher, training set)`` of ``N = round(alpha D)`` sequences instead
    (:func:`posterior_on_data`); the chains use the same key as for drawn data, so the same
    sequences give the same draws. The teacher may be ``None`` (then there is no start check);
    ``about_data`` is recorded with the settings.

    With ``options.check_start`` a second set of chains from the other start (informed when
    the main chains start at random, with the teacher known) samples the same posterior;
    its draws are stored in the group :data:`~bayes_slr.experiments.posterior_file.CHECK_GROUP`.
    """
    N = training_size(alpha, config.D)
    key_teacher, key_data, key_sampler = jax.random.split(jax.random.PRNGKey(options.seed), 3)
    if data is None:
        teacher = draw_teacher(key_teacher, config.D, exact=options.exact_teacher)
        batch = simulate(key_data, config, teacher, N)
    else:
        teacher, batch = data
    sampling = {
        "sampler": options.sampler,
        "chains": options.chains,
        "warmup": options.warmup,
        "samples": options.samples,
        "teacher": teacher,
        "progress": inner_progress(),
    }
    draws = sample_posterior(key_sampler, config, batch, init=options.init, **sampling)
    settings = {
        **settings_record(options, alpha, N, draws.sampler),
        "data": None if about_data is None else about_data.to_dict(),
    }
    tree = posterior_io.to_datatree(
        draws, config, batch, teacher, seed=options.seed, settings=settings
    )
    if options.check_start and teacher is not None:
        other = sample_posterior(
            jax.random.fold_in(key_sampler, 1),
            config,
            batch,
            init=_other_init(options.init),
            **sampling,
        )
        tree[CHECK_GROUP] = xr.DataTree(
            xr.Dataset(
                {
                    "k": (("chain", "draw", "dim"), other.k),
                    "v": (("chain", "draw", "dim"), other.v),
                },
                attrs={"init": _other_init(options.init)},
            )
        )
    return tree


def posterior_on_data(options: PosteriorOptions) -> tuple[xr.DataTree, PosteriorSummary]:
    """The posterior of ``options.data`` and its summary (bring-your-own data).

    With a teacher in the file every sequence is a training sequence and the summary is
    :func:`summarise`'s as for drawn data (test errors on fresh sequences of the teacher).
    Without one, ``round(holdout N)`` sequences chosen by the seed are held out
    (:func:`~bayes_slr.models.dataset.split_holdout`), the posterior is sampled on the rest,
    and every error (Bayes-optimal and plain posterior predictors, zero predictor, ERM softmax
    and linear trained on the same rest) is measured on them.
    """
    config, source = options.task(), options.data_source()
    train, test = training_and_test(source.load(), options.holdout, options.seed)
    about = DataRun(
        source,
        train.N,
        0 if test is None else test.N,
        None if test is None else options.holdout,
    )
    tree = sample_tree(
        config,
        train.N / config.D,
        options,
        data=(train.teacher, train.as_batch()),
        about_data=about,
    )
    return tree, summarise(tree, options, held_out=test)


def _check_start_table(
    tree: xr.DataTree, config: SLRConfig, teacher: Teacher | None, batch: SLRBatch
) -> dict[str, dict[str, float]]:
    """Diagnostics table of the check-start chains (same format as the main table)."""
    group = tree[CHECK_GROUP]
    k, v = group["k"].values, group["v"].values
    draws = PosteriorDraws(k, v, np.zeros(k.shape[:2]), {}, "check")
    return diagnostics.diagnostics_table(
        posterior_io.to_datatree(draws, config, batch, teacher, seed=None)
    )


def summarise(
    tree: xr.DataTree, options: SamplingOptions, held_out: Dataset | None = None
) -> PosteriorSummary:
    """Diagnostics, overlaps, the two posterior predictors' test errors, references, the start
    check, ERM and warnings of the posterior ``tree``.

    The test set comes from the recorded seed, so a re-summarised file gives the same numbers.
    ``bayes_error`` is the Bayes-optimal predictor (draws weighted by ``p(X | k)``),
    ``posterior_mean_f_error`` the plain posterior mean of ``f``; both are unbiased for the
    error of the exact posterior predictor (disjoint draw groups), with standard errors covering
    the test set and the draws.

    ERM: the fits stored in ``tree`` are reused when they were trained with ``options.lam``
    (scored again when ``N_test`` differs); else ERM is trained on the tree's training set and,
    with a teacher, its fits are added to ``tree`` (group
    :data:`~bayes_slr.experiments.posterior_file.ERM_GROUP`), so writing the tree keeps them.

    A tree without a teacher (bring-your-own data) is scored on ``held_out`` (required then):
    every error is the held-out mean of ``(y - f)^2`` minus ``Delta``, and the oracle error, the
    overlaps ``m_k, m_v`` and the start check are absent (``notes`` says so).
    ``paired_differences`` then holds :data:`PAIRED_DIFFERENCES`: every predictor is scored in
    one pass over the held-out sequences, and each difference is the mean over them of the
    per-sequence difference of the two errors, with its standard error (over sequences,
    combined with the posterior predictor's draw jackknife).
    """
    record = posterior_io.record_of(tree)
    config = posterior_io.config_of(tree)
    teacher, batch = posterior_io.teacher_of(tree), posterior_io.batch_of(tree)
    k, v = posterior_io.draws_of(tree)
    key_test, key_erm = jax.random.split(
        jax.random.fold_in(jax.random.PRNGKey(record["seed"] or 0), 1)
    )
    score = _scorer(key_test, config, teacher, held_out, options)
    table = diagnostics.diagnostics_table(tree)
    erm, erm_predictors, erm_notes = (
        _erm(tree, key_erm, config, teacher, batch, options, held_out)
        if options.erm
        else (None, {}, [])
    )
    others = {"zero": zero_predictor}
    if teacher is None:
        others.update({f"erm_{a}": f for a, f in erm_predictors.items()})
    paired = (
        [pair for pair in PAIRED_DIFFERENCES if set(pair) <= {"bayes", *others}]
        if teacher is None
        else []
    )
    errors = scored_posterior_errors(
        score, config, k, v, max_draws=options.max_draws, others=others, pairs=paired
    )
    convergence = diagnostics.convergence_summary(table)
    stats = tree.sample_stats
    divergences = int(stats["diverging"].sum()) if "diverging" in stats else None
    start_check = (
        _start_check(tree, options, config, teacher, batch, key_test, table, errors.bayes)
        if CHECK_GROUP in tree.children and options.check_start
        else None
    )
    importance = ImportanceESS(**errors.importance_ess)
    settings = record["config"]
    notes = list(erm_notes)
    if teacher is None:
        notes = _teacherless_notes(errors.bayes.n_test) + notes
    if options.from_file():
        notes.insert(
            0,
            f"re-summarised from {options.source}: the task, seed and sampling "
            "settings are the file's",
        )
    return PosteriorSummary(
        alpha=float(settings["alpha"]),
        N=int(settings["N"]),
        sampler=settings["sampler"],
        bayes_error=_error(errors.bayes),
        posterior_mean_f_error=_error(errors.plain),
        importance_ess=importance,
        n_test=errors.bayes.n_test,
        test_set=TEST_SET_FRESH if held_out is None else TEST_SET_HELD_OUT,
        oracle_error=(
            None
            if teacher is None
            else _estimate(score(known_directions_predictor(config, teacher)))
        ),
        population_bayes_error=bayes_error_exact(config).value,
        prior_predictive_error=_estimate(errors.others["zero"]),
        paired_differences=(
            {difference_name(a, b): _error(errors.others[difference_name(a, b)]) for a, b in paired}
            if teacher is None
            else None
        ),
        rhat_max=convergence["rhat_max"],
        ess_bulk_min=convergence["ess_bulk_min"],
        ess_tail_min=convergence["ess_tail_min"],
        divergences=divergences,
        diagnostics={name: Diagnostic(**row) for name, row in table.items()},
        overlaps=(
            None
            if teacher is None
            else {name: table[name]["mean"] for name in posterior_io.OVERLAPS}
        ),
        start_check=start_check,
        erm=erm,
        data=None if not settings.get("data") else DataRun.from_dict(settings["data"]),
        notes=tuple(notes),
        warnings=tuple(
            posterior_warnings(
                convergence["rhat_max"],
                convergence["ess_bulk_min"],
                divergences,
                start_check,
                importance,
            )
        ),
    )


def _error(error: ExcessError) -> PredictorError:
    return PredictorError(**error.as_dict())


def _estimate(error: ExcessError) -> Estimate:
    return Estimate(error.value, error.stderr)


def _scorer(
    key_test: jax.Array,
    config: SLRConfig,
    teacher: Teacher | None,
    held_out: Dataset | None,
    options: SamplingOptions,
) -> Scorer:
    """The test set: ``N_test`` fresh sequences of the teacher, or the held-out sequences when
    there is none."""
    if teacher is not None:
        return fresh_sample_scorer(key_test, config, teacher, options.N_test)
    if held_out is None:
        raise ConfigError(
            "a posterior without a teacher needs held-out sequences to measure the test error on"
        )
    return held_out_scorer(config, held_out.as_batch())


def _teacherless_notes(n_held_out: int) -> list[str]:
    """What a reader must know about errors measured without a teacher."""
    return [
        f"no teacher in the data: errors are mean (y - f)^2 - Delta on {n_held_out} held-out "
        "sequences (not used for sampling or training); the oracle error and the overlaps m_k, "
        "m_v are omitted",
        "no start check: its other start is the teacher (informed), which the data do not have",
    ]


def _start_check(
    tree: xr.DataTree,
    options: SamplingOptions,
    config: SLRConfig,
    teacher: Teacher,
    batch: SLRBatch,
    key_test: jax.Array,
    table: dict[str, dict[str, float]],
    error: ExcessError,
) -> StartCheck:
    """Errors and overlaps of the other start's chains against the main ones
    (:class:`~bayes_slr.experiments.posterior_records.StartCheck`)."""
    group = tree[CHECK_GROUP]
    other = posterior_errors(
        key_test,
        config,
        teacher,
        group["k"].values,
        group["v"].values,
        N_test=options.N_test,
        max_draws=options.max_draws,
    )
    check_table = _check_start_table(tree, config, teacher, batch)
    agreement = (error.value - other.bayes.value) / float(
        np.hypot(error.stderr, other.bayes.stderr)
    )
    overlap_z = {
        name: (table[name]["mean"] - check_table[name]["mean"])
        / float(np.hypot(table[name]["mcse_mean"], check_table[name]["mcse_mean"]))
        for name in posterior_io.OVERLAPS
    }
    multimodal = bool(
        abs(agreement) > START_AGREEMENT_WARNING
        or max(abs(z) for z in overlap_z.values()) > OVERLAP_AGREEMENT_WARNING
    )
    return StartCheck(
        init=group.attrs.get("init"),
        bayes_error=_error(other.bayes),
        posterior_mean_f_error=_error(other.plain),
        overlaps={name: check_table[name]["mean"] for name in posterior_io.OVERLAPS},
        overlap_difference_in_mcse=overlap_z,
        rhat_max=diagnostics.convergence_summary(check_table)["rhat_max"],
        agreement=agreement,
        multimodal=multimodal,
    )


def _erm(
    tree: xr.DataTree,
    key_fit: jax.Array,
    config: SLRConfig,
    teacher: Teacher | None,
    batch: SLRBatch,
    options: SamplingOptions,
    held_out: Dataset | None,
) -> tuple[dict[str, ERMComparison], dict[str, Predictor], list[str]]:
    """ERM on the posterior's training set, reused from ``tree`` when stored with the same
    ``lam``, else trained as ``gap`` trains it (several starts, the ridge by validation) and
    stored in ``tree`` (with a teacher); scored on the posterior's test set (fresh sequences of
    the teacher, or ``held_out``).

    Returns the rows per activation, the fitted predictors (to score again beside the
    posterior's) and notes.
    """
    stored = stored_erm(tree)
    if teacher is not None and stored is not None and stored.lam == options.lam:
        if stored.N_test == options.N_test:
            return stored.rows, {}, []
        return (
            _rescored(stored, config, teacher, options.N_test),
            {},
            [
                f"ERM: the fits stored in the file, scored on {options.N_test} fresh test "
                f"sequences (stored scores: {stored.N_test})"
            ],
        )
    rows, predictors, fits = {}, {}, {}
    seed = int(jax.random.randint(key_fit, (), 0, 2**31 - 1))
    test = None if teacher is not None or held_out is None else held_out.as_batch()
    settings = ERMSettings(
        lam=options.lam,
        **({} if options.N_test is None else {"N_test": options.N_test}),
        predict_population=False,
    )
    for activation in ERM_ACTIVATIONS:
        summary = erm_study(
            config,
            activation,
            settings,
            seed,
            alpha=batch.y.shape[0] / config.D,
            data=(teacher, batch),
            test_set=test,
        )
        selected = summary.per_seed[0]
        rows[activation] = ERMComparison(
            test_error=summary.test_error,
            stderr=summary.stderr,
            converged=selected.converged,
            lam=selected.lam,
            restarts_agree=summary.restarts_agree,
            notes=tuple(summary.notes),
        )
        fit = jax.tree_util.tree_map(lambda leaf: np.asarray(leaf[0]), summary.params)
        fits[activation] = (fit.k, fit.v, fit.c)
        predictors[activation] = attention_predictor(AttentionParams(*fits[activation]), activation)
    if teacher is not None:
        store_erm(tree, StoredERM(options.lam, options.N_test, seed, rows, fits))
    return rows, predictors, []


def _rescored(
    stored: StoredERM, config: SLRConfig, teacher: Teacher, N_test: int
) -> dict[str, ERMComparison]:
    """The stored ERM fits scored on ``N_test`` fresh sequences of ERM's own test key (the
    sequences :func:`~bayes_slr.studies.erm.erm_study` scored the first of)."""
    score = fresh_sample_scorer(seed_keys(stored.seed, 0)[3], config, teacher, N_test)
    rows = {}
    for activation, row in stored.rows.items():
        error = score(attention_predictor(AttentionParams(*stored.fits[activation]), activation))
        rows[activation] = dataclasses.replace(row, test_error=error.value, stderr=error.stderr)
    return rows

"""The posterior study: the posterior of one training set, sampled into an ArviZ ``DataTree``, and
everything its summary reports (imported by ``posterior`` and ``posterior-sweep`` inside
``solve``: this module imports JAX).

One head or several (``SLRConfig.heads``, ``presence``; docs/multihead.md section 8): the draws
of a multi-head task have a head axis, its tree the layout of
:mod:`bayes_slr.inference.posterior_io`, and the posterior is symmetric under a permutation of the
heads, so its diagnostics and overlaps are the label-free matched overlaps; the predictors (the
heads' joint states summed out), the references, the start check and ERM (an ``H``-head student)
are the one-head ones.

:func:`sample_tree` draws the teacher and ``N = round(alpha D)`` training sequences of the seed (or
takes given ones) and samples the posterior of ``(k*, v*)`` with the
:class:`~bayes_slr.studies.posterior_records.SamplingSettings`; :func:`summarise` measures
everything :class:`~bayes_slr.studies.posterior_records.PosteriorSummary` reports.
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
from bayes_slr.formulas.bayes import bayes_error_exact
from bayes_slr.inference import diagnostics, posterior_io
from bayes_slr.inference.location import known_directions_predictor
from bayes_slr.inference.predictive import (
    PosteriorErrors,
    posterior_errors,
    scored_posterior_errors,
)
from bayes_slr.inference.samplers import PosteriorDraws, sample_posterior
from bayes_slr.models.dataset import Dataset, DataSource, training_and_test
from bayes_slr.models.scoring import (
    ExcessError,
    Predictor,
    Scorer,
    difference_name,
    fresh_sample_scorer,
    held_out_scorer,
    zero_predictor,
)
from bayes_slr.models.simulate import SLRBatch, Teacher, draw_task_teacher, simulate
from bayes_slr.models.spec import SLRConfig, training_size
from bayes_slr.studies.erm import erm_study, seed_keys
from bayes_slr.studies.posterior_file import (
    CHECK_GROUP,
    StoredERM,
    sampled_with,
    settings_record,
    store_erm,
    stored_erm,
)
from bayes_slr.studies.posterior_records import (
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
    SamplingSettings,
    StartCheck,
    posterior_warnings,
)

PAIRED_DIFFERENCES = (
    ("bayes", "oracle"),
    ("plain", "bayes"),
    ("bayes", "erm_softmax"),
    ("bayes", "erm_linear"),
    ("erm_softmax", "erm_linear"),
    ("bayes", "zero"),
)
"""Differences reported on the posterior's test sequences (fresh sequences of the teacher, or the
held-out sequences of data without one), paired on the same sequences; the oracle's only with a
teacher, the ERM ones only with the ERM comparison. ``bayes`` is the Bayes-optimal predictor,
``plain`` the plain posterior mean of ``f``, ``oracle`` the teacher's known-direction predictor,
``erm_<a>`` ERM."""


def _other_init(init: str) -> str:
    return "informed" if init == "random" else "random"


def seed_training_set(
    config: SLRConfig,
    settings: SamplingSettings,
    seed: int,
    data: tuple[Teacher | None, SLRBatch] | None = None,
) -> tuple[int, Teacher | None, SLRBatch, jax.Array]:
    """``N = round(alpha D)`` (``settings.alpha``), the teacher and training set of ``seed``
    (drawn for ``config``, one head or several, or the given ``data``) and the key of its
    chains."""
    N = training_size(settings.alpha, config.D)
    key_teacher, key_data, key_sampler = jax.random.split(jax.random.PRNGKey(seed), 3)
    if data is not None:
        return N, *data, key_sampler
    teacher = draw_task_teacher(key_teacher, config, exact=settings.exact_teacher)
    return N, teacher, simulate(key_data, config, teacher, N), key_sampler


def sample_chains(
    key: jax.Array,
    config: SLRConfig,
    batch: SLRBatch,
    teacher: Teacher | None,
    settings: SamplingSettings,
    init: str,
    progress: bool,
) -> PosteriorDraws:
    """The chains of ``settings`` (sampler, chains, warm-up, draws) from the start ``init``."""
    return sample_posterior(
        key,
        config,
        batch,
        sampler=settings.sampler,
        chains=settings.chains,
        warmup=settings.warmup,
        samples=settings.samples,
        init=init,
        teacher=teacher,
        progress=progress,
    )


def sample_tree(
    config: SLRConfig,
    settings: SamplingSettings,
    seed: int,
    *,
    data: tuple[Teacher | None, SLRBatch] | None = None,
    about_data: DataRun | None = None,
    progress: bool = False,
) -> xr.DataTree:
    """Draw the teacher and training set of ``seed``, sample the posterior, return its ArviZ
    ``DataTree``.

    ``data``: a given ``(teacher, training set)`` of ``N = round(alpha D)`` sequences
    (``settings.alpha``) instead
    (a data file's); the chains use the same key as for drawn data, so the same
    sequences give the same draws. The teacher may be ``None`` (then there is no start check);
    ``about_data`` is recorded with the settings.

    ``progress``: show the chains' warm-up and sampling steps (changes no draw).

    With ``settings.check_start`` a second set of chains from the other start (informed when
    the main chains start at random, with the teacher known) samples the same posterior;
    its draws are stored in the group :data:`~bayes_slr.studies.posterior_file.CHECK_GROUP`.
    """
    N, teacher, batch, key_sampler = seed_training_set(config, settings, seed, data)
    draws = sample_chains(key_sampler, config, batch, teacher, settings, settings.init, progress)
    record = {
        **settings_record(settings, N, draws.sampler),
        "data": None if about_data is None else about_data.to_dict(),
    }
    tree = posterior_io.to_datatree(
        draws, config, batch, teacher, seed=seed, settings=record, max_draws=settings.max_draws
    )
    if settings.check_start and teacher is not None:
        other = sample_chains(
            jax.random.fold_in(key_sampler, 1),
            config,
            batch,
            teacher,
            settings,
            _other_init(settings.init),
            progress,
        )
        dims = ("chain", "draw", *(("head",) if config.multihead else ()), "dim")
        tree[CHECK_GROUP] = xr.DataTree(
            xr.Dataset(
                {"k": (dims, other.k), "v": (dims, other.v)},
                attrs={"init": _other_init(settings.init)},
            )
        )
    return tree


def kept_point(
    config: SLRConfig,
    settings: SamplingSettings,
    seed: int,
    path: Path | None,
    *,
    progress: bool = False,
) -> PosteriorSummary:
    """The summary of the posterior of ``seed``'s training set at ``settings.alpha``; with
    ``path``, the
    posterior is written there atomically once summarised, so a file exists only for a finished
    point, and a file there sampled with these very settings (left by an interrupted run:
    written, not yet logged) is read instead of sampling again."""
    tree = _earlier_tree(path, config, settings, seed)
    if tree is None:
        tree = sample_tree(config, settings, seed, progress=progress)
    summary = summarise(tree, settings)
    if path is not None:
        posterior_io.save_posterior(tree, path, force=True)
    return summary


def _earlier_tree(
    path: Path | None, config: SLRConfig, settings: SamplingSettings, seed: int
) -> xr.DataTree | None:
    """The posterior at ``path`` if it was sampled with these settings, else ``None``."""
    if path is None or not path.is_file():
        return None
    try:
        tree = posterior_io.load_posterior(path)
    except ConfigError:
        return None
    return tree if sampled_with(tree, config, settings, seed) else None


def posterior_on_data(
    config: SLRConfig,
    settings: SamplingSettings,
    seed: int,
    *,
    source: DataSource,
    holdout: float | None,
    progress: bool = False,
) -> tuple[xr.DataTree, PosteriorSummary]:
    """The posterior of the data file ``source`` (of task ``config``) and its summary
    (bring-your-own data).

    With a teacher in the file every sequence is a training sequence and the summary is
    summarised's as for drawn data (test errors on fresh sequences of the teacher).
    Without one, ``round(holdout N)`` sequences chosen by ``seed`` are held out
    (:func:`~bayes_slr.models.dataset.split_holdout`), the posterior is sampled on the rest,
    and every error (Bayes-optimal and plain posterior predictors, zero predictor, ERM softmax
    and linear trained on the same rest) is measured on them.
    """
    train, test = training_and_test(source.load(heads=config.multihead), holdout, seed)
    about = DataRun(
        source, train.N, 0 if test is None else test.N, None if test is None else holdout
    )
    tree = sample_tree(
        config,
        dataclasses.replace(settings, alpha=train.N / config.D),
        seed,
        data=(train.teacher, train.as_batch()),
        about_data=about,
        progress=progress,
    )
    return tree, summarise(tree, settings, held_out=test)


def _start_check_table(
    tree: xr.DataTree, config: SLRConfig, teacher: Teacher | None, batch: SLRBatch
) -> dict[str, dict[str, float]]:
    """Diagnostics table of the check-start chains (same format as the main table)."""
    group = tree[CHECK_GROUP]
    k, v = group["k"].values, group["v"].values
    draws = PosteriorDraws(k, v, np.zeros(k.shape[:2]), {}, "check")
    overlaps = posterior_io.overlaps(k, v, teacher, config.multihead)
    return diagnostics.diagnostics_table(
        posterior_io.draws_tree(
            draws, config, batch, teacher, overlaps, None, head_axis=config.multihead
        )
    )


def summarise(
    tree: xr.DataTree, settings: SamplingSettings, held_out: Dataset | None = None
) -> PosteriorSummary:
    """Diagnostics, overlaps, the two posterior predictors' test errors, references, the start
    check, ERM and warnings of the posterior ``tree``.

    The test set comes from the recorded seed, so a re-summarised file gives the same numbers.
    ``bayes_error`` is the Bayes-optimal predictor (draws weighted by ``p(X | k)``),
    ``posterior_mean_f_error`` the plain posterior mean of ``f``; both are unbiased for the
    error of the exact posterior predictor (disjoint draw groups), with standard errors covering
    the test set and the draws.

    ERM: the fits stored in ``tree`` are reused when they were trained with ``settings.lam``
    (scored again when ``N_test`` differs); else ERM is trained on the tree's training set and,
    with a teacher, its fits are added to ``tree`` (group
    :data:`~bayes_slr.studies.posterior_file.ERM_GROUP`), so writing the tree keeps them.

    A tree without a teacher (bring-your-own data) is scored on ``held_out`` (required then):
    every error is the held-out mean of ``(y - f)^2`` minus ``Delta``, and the oracle error, the
    overlaps ``m_k, m_v`` and the start check are absent (``notes`` says so).
    ``paired_differences`` holds :data:`PAIRED_DIFFERENCES`: every predictor (the oracle and ERM's
    too) is scored in one pass over the test sequences, and each difference is the mean over them
    of the per-sequence difference of the two errors, with its standard error (over sequences,
    combined with the posterior predictor's draw jackknife).
    """
    record, config = posterior_io.record_of(tree), posterior_io.config_of(tree)
    teacher, batch = posterior_io.teacher_of(tree), posterior_io.batch_of(tree)
    key_test, key_erm = jax.random.split(
        jax.random.fold_in(jax.random.PRNGKey(record["seed"] or 0), 1)
    )
    score = _scorer(key_test, config, teacher, held_out, settings)
    table = diagnostics.diagnostics_table(tree)
    erm, erm_predictors, erm_notes = _erm(tree, key_erm, config, teacher, batch, settings, held_out)
    errors, paired = _scored_errors(tree, score, config, teacher, settings, erm_predictors)
    convergence = diagnostics.convergence_summary(table)
    divergences = _divergences(tree)
    start_check = (
        _start_check(tree, settings, config, teacher, batch, key_test, table, errors.bayes)
        if CHECK_GROUP in tree.children and settings.check_start
        else None
    )
    importance = ImportanceESS(**errors.importance_ess)
    recorded = record["config"]
    notes = (*(_teacherless_notes(errors.bayes.n_test) if teacher is None else []), *erm_notes)
    oracle_error, overlaps = _teacher_references(errors, teacher, table)
    warnings = posterior_warnings(
        convergence["rhat_max"], convergence["ess_bulk_min"], divergences, start_check, importance
    )
    return PosteriorSummary(
        alpha=float(recorded["alpha"]),
        N=int(recorded["N"]),
        sampler=recorded["sampler"],
        bayes_error=_error(errors.bayes),
        posterior_mean_f_error=_error(errors.plain),
        importance_ess=importance,
        n_test=errors.bayes.n_test,
        test_set=TEST_SET_FRESH if held_out is None else TEST_SET_HELD_OUT,
        oracle_error=oracle_error,
        population_bayes_error=bayes_error_exact(config).value,
        prior_predictive_error=_estimate(errors.others["zero"]),
        paired_differences=(
            {difference_name(a, b): _error(errors.others[difference_name(a, b)]) for a, b in paired}
            or None
        ),
        rhat_max=convergence["rhat_max"],
        ess_bulk_min=convergence["ess_bulk_min"],
        ess_tail_min=convergence["ess_tail_min"],
        divergences=divergences,
        diagnostics={name: Diagnostic(**row) for name, row in table.items()},
        overlaps=overlaps,
        start_check=start_check,
        erm=erm,
        data=None if not recorded.get("data") else DataRun.from_dict(recorded["data"]),
        notes=notes,
        warnings=tuple(warnings),
        heads=config.heads,
        presence=config.presence,
    )


def _scored_errors(
    tree: xr.DataTree,
    score: Scorer,
    config: SLRConfig,
    teacher: Teacher | None,
    settings: SamplingSettings,
    erm_predictors: dict[str, Predictor],
) -> tuple[PosteriorErrors, list[tuple[str, str]]]:
    """The errors of the posterior predictors of ``tree`` and of the predictors scored beside
    them on the same test set (the zero predictor, the oracle with a teacher, ERM's), and the
    paired differences among them (those of :data:`PAIRED_DIFFERENCES` it has)."""
    k, v = posterior_io.draws_of(tree)
    others = {"zero": zero_predictor}
    if teacher is not None:
        others["oracle"] = known_directions_predictor(config, teacher)
    others.update({f"erm_{a}": f for a, f in erm_predictors.items()})
    paired = [pair for pair in PAIRED_DIFFERENCES if set(pair) <= {"bayes", "plain", *others}]
    errors = scored_posterior_errors(
        score, config, k, v, max_draws=settings.max_draws, others=others, pairs=paired
    )
    return errors, paired


def _teacher_references(
    errors: PosteriorErrors, teacher: Teacher | None, table: dict[str, dict[str, float]]
) -> tuple[Estimate | None, dict[str, float] | None]:
    """The error of the teacher's known-direction (oracle) predictor, scored beside the
    posterior's, and the posterior mean overlaps with the teacher; ``None`` both without a
    teacher."""
    if teacher is None:
        return None, None
    overlaps = {name: table[name]["mean"] for name in posterior_io.OVERLAPS}
    return _estimate(errors.others["oracle"]), overlaps


def _divergences(tree: xr.DataTree) -> int | None:
    """Divergent transitions of the chains (``None`` for a sampler that does not report them)."""
    stats = tree.sample_stats
    return int(stats["diverging"].sum()) if "diverging" in stats else None


def _error(error: ExcessError) -> PredictorError:
    return PredictorError(**error.as_dict())


def _estimate(error: ExcessError) -> Estimate:
    return Estimate(error.value, error.stderr)


def _scorer(
    key_test: jax.Array,
    config: SLRConfig,
    teacher: Teacher | None,
    held_out: Dataset | None,
    settings: SamplingSettings,
) -> Scorer:
    """The test set: ``N_test`` fresh sequences of the teacher, or the held-out sequences when
    there is none."""
    if teacher is not None:
        return fresh_sample_scorer(key_test, config, teacher, settings.N_test)
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
    settings: SamplingSettings,
    config: SLRConfig,
    teacher: Teacher,
    batch: SLRBatch,
    key_test: jax.Array,
    table: dict[str, dict[str, float]],
    error: ExcessError,
) -> StartCheck:
    """Errors and overlaps of the other start's chains against the main ones
    (:class:`~bayes_slr.studies.posterior_records.StartCheck`)."""
    group = tree[CHECK_GROUP]
    other = posterior_errors(
        key_test,
        config,
        teacher,
        group["k"].values,
        group["v"].values,
        N_test=settings.N_test,
        max_draws=settings.max_draws,
    )
    start_table = _start_check_table(tree, config, teacher, batch)
    agreement = (error.value - other.bayes.value) / float(
        np.hypot(error.stderr, other.bayes.stderr)
    )
    overlap_z = {
        name: (table[name]["mean"] - start_table[name]["mean"])
        / float(np.hypot(table[name]["mcse_mean"], start_table[name]["mcse_mean"]))
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
        overlaps={name: start_table[name]["mean"] for name in posterior_io.OVERLAPS},
        overlap_difference_in_mcse=overlap_z,
        rhat_max=diagnostics.convergence_summary(start_table)["rhat_max"],
        agreement=agreement,
        multimodal=multimodal,
    )


def _erm(
    tree: xr.DataTree,
    key_fit: jax.Array,
    config: SLRConfig,
    teacher: Teacher | None,
    batch: SLRBatch,
    settings: SamplingSettings,
    held_out: Dataset | None,
) -> tuple[dict[str, ERMComparison] | None, dict[str, Predictor], list[str]]:
    """ERM on the posterior's training set (none without ``settings.erm``; a student of the
    task's ``H`` heads, docs/multihead.md section 7), reused from ``tree`` when stored with the
    same ``lam``, else trained as ``gap`` trains it (several starts, the ridge by validation) and
    stored in ``tree`` (with a teacher); scored on the posterior's test set (fresh sequences of
    the teacher, or ``held_out``).

    Returns the rows per activation, the fitted predictors (stored or trained: scored again
    beside the posterior's, on its test sequences) and notes.
    """
    if not settings.erm:
        return None, {}, []
    stored = stored_erm(tree)
    if teacher is not None and stored is not None and stored.lam == settings.lam:
        predictors = {
            a: attention_predictor(AttentionParams(*fit), a) for a, fit in stored.fits.items()
        }
        if stored.N_test == settings.N_test:
            return stored.rows, predictors, []
        return (
            _rescored(stored, config, teacher, settings.N_test),
            predictors,
            [
                f"ERM: the fits stored in the file, scored on {settings.N_test} fresh test "
                f"sequences (stored scores: {stored.N_test})"
            ],
        )
    rows, predictors, fits = {}, {}, {}
    seed = int(jax.random.randint(key_fit, (), 0, 2**31 - 1))
    test = None if teacher is not None or held_out is None else held_out.as_batch()
    erm_settings = ERMSettings(
        alpha=batch.y.shape[0] / config.D,
        lam=settings.lam,
        **({} if settings.N_test is None else {"N_test": settings.N_test}),
        predict_population=False,
        student_heads=config.heads,
    )
    for activation in ERM_ACTIVATIONS:
        summary = erm_study(
            config,
            erm_settings.replace(activation=activation),
            seed,
            data=(teacher, batch),
            test_set=test,
        )
        rows[activation] = ERMComparison.of(summary)
        fit = jax.tree_util.tree_map(lambda leaf: np.asarray(leaf[0]), summary.params)
        fits[activation] = (fit.k, fit.v, fit.c)
        predictors[activation] = attention_predictor(AttentionParams(*fits[activation]), activation)
    if teacher is not None:
        store_erm(tree, StoredERM(settings.lam, settings.N_test, seed, rows, fits))
    return rows, predictors, []


def _rescored(
    stored: StoredERM, config: SLRConfig, teacher: Teacher, N_test: int
) -> dict[str, ERMComparison]:
    """The stored ERM fits scored on ``N_test`` fresh sequences of ERM's own test key, in
    dimension ``D`` (the law of the sequences :func:`~bayes_slr.studies.erm.erm_study` draws in
    the span of the teacher and the fits, on other random numbers)."""
    score = fresh_sample_scorer(seed_keys(stored.seed, 0)[3], config, teacher, N_test)
    rows = {}
    for activation, row in stored.rows.items():
        error = score(attention_predictor(AttentionParams(*stored.fits[activation]), activation))
        rows[activation] = dataclasses.replace(row, test_error=error.value, stderr=error.stderr)
    return rows

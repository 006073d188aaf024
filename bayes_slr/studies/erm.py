"""ERM studies: training over several seeds at once, and test error on fresh samples.

:func:`fit_erm` (one training set) lives in :mod:`bayes_slr.attention.training` and is
re-exported here. :func:`erm_study` is the one entry point for "train ERM and score it":
on ``seeds`` drawn teachers with ``N = round(alpha D)`` training samples each, or on a given
training set (``data``), it trains every start of every seed (L-BFGS: one problem after another
by one compiled trainer; one-pass SGD: all at once, ``jax.vmap``) with the
choices of an :class:`~bayes_slr.attention.erm_settings.ERMSettings`, and reports the test error
of each fit (fresh samples from the teacher, or given held-out sequences) beside the zero
predictor, the teacher's own Bayes predictor (the oracle) and the population error that
docs/model.md section 4 predicts from its overlaps.

The steps, one function each: the training sets (:func:`_training_sets`), the starts
(:func:`_starts`), the ridge (:func:`_ridges`: given, or chosen by validation), the training of
every start (:func:`_train_every_start`), the scoring of one seed (:func:`_seed_record`: a typed
:class:`~bayes_slr.studies.erm_records.ERMSeed`) and the summary over seeds (:func:`_summary`).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayes_slr.attention.erm_settings import (
    DEFAULT_LAM_GRID,
    DEFAULT_STARTS,
    LAM_AUTO,
    VALIDATION_FRACTION,
    VALIDATION_PATIENCE,
    ERMSettings,
    lam_accepted,
)
from bayes_slr.attention.estimators import (
    AttentionParams,
    attention_predictor,
    overlaps,
    predict,
    random_heads,
)
from bayes_slr.attention.optimizers import get_optimizer
from bayes_slr.attention.span import span_reduction
from bayes_slr.attention.training import (
    ERMFit,
    SeedSamples,
    default_learning_rate,
    fit_erm,
    initial_params,
    padded_to_bucket,
    seed_samples,
    train_problems,
)
from bayes_slr.errors import ConfigError
from bayes_slr.formulas.population import population_error
from bayes_slr.inference.location import known_directions_predictor
from bayes_slr.models.scoring import (
    Scorer,
    difference_name,
    excess_test_error,
    fresh_sample_scorer,
    held_out_scorer,
    zero_predictor,
)
from bayes_slr.models.simulate import SLRBatch, Teacher, draw_task_teacher, simulate
from bayes_slr.models.spec import SLRConfig, training_size
from bayes_slr.numerics.paired import PairedDifference, teacher_mean
from bayes_slr.studies.erm_records import (
    ERMSeed,
    FitOverlaps,
    HeadOverlaps,
    OracleError,
    RandomStarts,
    RidgeValidation,
    StartFigures,
)

__all__ = [
    "DEFAULT_LAM_GRID",
    "DEFAULT_STARTS",
    "ERMFit",
    "ERMSettings",
    "ERMSeed",
    "ERMSummary",
    "LAM_AUTO",
    "VALIDATION_FRACTION",
    "VALIDATION_PATIENCE",
    "lam_accepted",
    "erm_study",
    "fit_erm",
    "test_error",
]


def test_error(
    key: jax.Array,
    params: AttentionParams,
    config: SLRConfig,
    teacher: Teacher,
    activation: str,
    N_test: int = 100_000,
) -> tuple[float, float]:
    """Excess test error ``E[(y - f(X))^2] - Delta`` of ``params`` and its standard error.

    Estimated on ``N_test`` fresh samples of the task ``config`` with ``teacher``, generated in
    chunks (memory stays flat), by the toolkit's one estimator
    (:func:`~bayes_slr.models.scoring.excess_test_error`).

    Returns
    -------
    (error, stderr)
    """
    if jnp.shape(params.k)[-1] != config.D:
        raise ConfigError(
            f"params have D = {jnp.shape(params.k)[-1]} but config.D = {config.D}; they must match"
        )
    result = excess_test_error(
        key, config, teacher, attention_predictor(params, activation), N_test=N_test
    )
    return result.value, result.stderr


AGREEMENT_FLOOR = 1e-3
"""Smallest tolerance of ``restarts_agree``: far above the spread of test errors between
starts that reach the same minimum (measured below 1e-5 at ``|grad| <= 1e-6``), far below
the third decimal that a table shows."""


class ERMSummary(NamedTuple):
    """Result of :func:`erm_study`.

    Attributes
    ----------
    test_error : mean over seeds of the per-seed test error of the selected start.
    stderr : its standard error (see :func:`erm_study`).
    per_seed : one :class:`~bayes_slr.studies.erm_records.ERMSeed` per seed: the selected
        start's figures, every random start, the informed start, the zero predictor
        (``E[z*^2]`` on the same test samples: about ``|v*|^2/D``, not exactly 1 for a teacher
        drawn from the prior), the oracle (the teacher's own Bayes predictor with known directions,
        docs/model.md section 2: on every sequence no predictor does better) and the choice of
        ``lam="auto"``.
    restarts_agree : all seeds' ``restarts_agree`` (``None`` with one random start).
    lam : the ``lam`` of each seed.
    zero_error : mean over seeds of ``zero_error``.
    informed_test_error : mean over seeds of the informed start's test error (``None`` for given
        data without a teacher: no informed start, and ``overlaps``, ``informed``, ``oracle``
        are ``None`` per seed).
    notes : sentences a reader must see with the number (disagreeing restarts, no
        convergence, a ``lam`` chosen at the edge of the grid).
    params : the selected fit of every seed (leaves with leading axis ``seeds``), to score it
        again beside other predictors (:func:`~bayes_slr.attention.estimators.attention_predictor`).
    oracle_error, oracle_stderr : the oracle's test error, mean over seeds and its standard error
        (:func:`seed_mean`); ``None`` without a teacher.
    """

    test_error: float
    stderr: float
    per_seed: tuple[ERMSeed, ...]
    restarts_agree: bool | None = None
    lam: tuple[float, ...] = ()
    zero_error: float = float("nan")
    informed_test_error: float | None = float("nan")
    notes: tuple[str, ...] = ()
    params: AttentionParams | None = None
    oracle_error: float | None = None
    oracle_stderr: float | None = None


class _Trainer(NamedTuple):
    """How every start is trained: the activation, the optimiser and its stopping rule."""

    activation: str
    optimizer: str
    tol: float
    max_iter: int
    learning_rate: float

    @classmethod
    def of(cls, config: SLRConfig, settings: ERMSettings) -> _Trainer:
        """The trainer of ``settings`` on the task ``config`` (its activation's default learning
        rate)."""
        return cls(
            settings.activation,
            settings.optimizer,
            settings.tol,
            settings.max_iter,
            default_learning_rate(config, settings.activation),
        )

    def __call__(
        self, starts, batches: SLRBatch | SeedSamples, lams, active: np.ndarray | None = None
    ):
        """Every (``active``) start (leaves ``(seeds, G, S, ...)``) trained on ``batches`` (leaves
        ``(seeds, ...)``) at ``lams`` ``(seeds, G)``: ``(params, values, grad_norms, iterations)``
        (:func:`~bayes_slr.attention.training.train_problems`)."""
        return train_problems(starts, batches, lams, active=active, **self._asdict())


@functools.partial(jax.jit, static_argnames=("activation",))
def _validation_errors(params, X, lengths, y, activation):
    """Mean ``(y - f)^2`` on held-out samples; ``params`` leaves ``(seeds, G, ...)``, data ``(seeds,
    ...)``.
    """

    def one(p, X_s, lengths_s, y_s):
        return jnp.mean((y_s - predict(p, X_s, lengths_s, activation)) ** 2)

    return jax.vmap(jax.vmap(one, in_axes=(0, None, None, None)))(params, X, lengths, y)


def _scores(params, values: np.ndarray, held_out: SLRBatch, activation: str) -> np.ndarray:
    """Validation error ``(seeds, G)`` of the lowest-training-loss start of each ``(seed, lam)``.

    ``params`` leaves and ``values`` have leading axes ``(seeds, G, S)``. A ``lam`` whose
    starts all diverged scores ``inf``.
    """
    index = _lowest(values)  # (seeds, G)
    chosen = jax.tree_util.tree_map(  # on the host: no array program per leaf
        lambda leaf: np.take_along_axis(
            np.asarray(leaf), index.reshape(index.shape + (1,) * (leaf.ndim - 2)), axis=2
        )[:, :, 0],
        params,
    )
    scores = np.asarray(
        _validation_errors(chosen, held_out.X, held_out.lengths, held_out.y, activation)
    )
    return np.where(np.isfinite(scores) & np.any(np.isfinite(values), axis=-1), scores, np.inf)


def _validation_path(
    trainer: _Trainer,
    candidates,
    fit_part: SLRBatch,
    held_out: SLRBatch,
    lam_grid: tuple[float, ...],
    patience: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Validation errors ``(seeds, len(lam_grid))`` along the regularisation path (L-BFGS), from
    the largest ``lam`` down, and where every candidate coincided (:func:`_coinciding`).

    Each ``lam`` starts every candidate at its solution for the previous (larger) ``lam``
    (a diverged solution is not handed on: that candidate keeps its previous start): the solution
    moves little between neighbouring values, so a step costs tens of iterations where a cold
    start at small ``lam`` costs hundreds. A candidate whose solution coincides with a
    lower-objective one's (:func:`_distinct`) would walk the same path from there on: it is
    left out of the smaller values (the scores take the lowest objective, which the kept one
    holds). The path stops once every seed's validation error has
    been above its best for ``patience`` consecutive values: the smaller values, the slowest to
    fit (the ridge is what conditions the flat directions of the objective), are then
    left out (``nan`` in the scores).
    """
    seeds, count = jax.tree_util.tree_leaves(candidates)[0].shape[:2]
    sets = (  # every value trains on the same sets: each seed's samples split out once
        fit_part if get_optimizer(trainer.optimizer).vectorised else seed_samples(fit_part)
    )
    scores = np.full((seeds, len(lam_grid)), np.nan)
    coinciding = np.zeros((seeds, len(lam_grid)), bool)
    current = _broadcast(candidates, (1,))
    worse = np.zeros(seeds, int)
    active = np.ones((seeds, 1, count), bool)
    for position in np.argsort(lam_grid)[::-1]:
        params, values, _, _ = trainer(
            current, sets, np.full((seeds, 1), lam_grid[position]), active
        )
        values = np.asarray(values)
        distinct = _distinct(params, values)
        coinciding[:, position] = _coinciding(active, values, distinct)
        active &= distinct
        scores[:, position] = _scores(params, values, held_out, trainer.activation)[:, 0]
        finite = np.isfinite(values)
        current = jax.tree_util.tree_map(
            lambda new, old: np.where(
                finite.reshape(finite.shape + (1,) * (new.ndim - 3)), new, old
            ),
            params,
            current,
        )
        best = np.min(np.where(np.isfinite(scores), scores, np.inf), axis=1)
        worse = np.where(scores[:, position] > best, worse + 1, 0)
        if np.all(worse >= patience):
            break
    return scores, coinciding


def _coinciding(active: np.ndarray, values: np.ndarray, distinct: np.ndarray) -> np.ndarray:
    """Per seed, whether every candidate (``(seeds, 1, S)`` masks and ``values``) was trained at
    this ``lam`` and all reached one solution (:func:`_distinct` kept one): the starts' evidence
    that the objective has one minimum there, by which the refit trains one of them
    (:func:`_train_every_start`)."""
    count = active.shape[-1]
    trained = np.all(active & np.isfinite(values), axis=(1, 2))
    return trained & (count > 1) & (np.sum(distinct, axis=(1, 2)) == 1)


DUPLICATE_TOLERANCE = 1e-3
"""Two solutions of the validation path are the same one when their parameters differ by at
most this share of the kept one's norm: above L-BFGS's distance to the minimum at
``|grad| <= tol`` (at most ``tol`` over the smallest curvature, ``>= lam / N``: ``1.6e-5`` at
``lam = 100``, ``N = 1600``, where the starts of ``gap``'s points coincide), far below the
distance between distinct minima (of the order of the norm)."""


def _distinct(params, values: np.ndarray) -> np.ndarray:
    """Which candidates (leaves and ``values`` ``(seeds, 1, S)``) hold a solution of their own:
    in order of objective, one farther than :data:`DUPLICATE_TOLERANCE` (relative) from every
    one kept before it; a diverged one (non-finite objective) is kept, to start again from its
    previous solution."""
    flat = np.concatenate(
        [
            np.asarray(leaf).reshape(leaf.shape[:3] + (-1,))
            for leaf in jax.tree_util.tree_leaves(params)
        ],
        axis=-1,
    )[:, 0]
    keep = ~np.isfinite(values)
    for s, row in enumerate(values[:, 0]):
        kept: list[np.ndarray] = []
        for k in np.flatnonzero(np.isfinite(row))[np.argsort(row[np.isfinite(row)])]:
            if all(
                np.linalg.norm(flat[s, k] - other) > DUPLICATE_TOLERANCE * np.linalg.norm(other)
                for other in kept
            ):
                kept.append(flat[s, k])
                keep[s, 0, k] = True
    return keep


def _broadcast(tree, shape):
    """Repeat the leaves of ``tree`` (leading axis ``seeds``) over new axes ``shape`` after it
    (numpy leaves: host bookkeeping, no array program per leaf)."""
    return jax.tree_util.tree_map(
        lambda leaf: np.broadcast_to(
            np.reshape(leaf, leaf.shape[:1] + (1,) * len(shape) + leaf.shape[1:]),
            leaf.shape[:1] + tuple(shape) + leaf.shape[1:],
        ),
        tree,
    )


def _lowest(losses: np.ndarray) -> np.ndarray:
    """Index of the lowest training loss along the last axis (non-finite losses never win)."""
    return np.argmin(np.where(np.isfinite(losses), losses, np.inf), axis=-1)


def seed_keys(seed: int, index: int | jax.Array) -> jax.Array:
    """The four PRNG keys of seed ``index`` of an experiment: teacher, training set, starts, test
    samples.
    """
    return jax.random.split(jax.random.fold_in(jax.random.PRNGKey(seed), index), 4)


def _every_seed_keys(seed: int | jax.Array, seeds: int) -> jax.Array:
    """:func:`seed_keys` of seeds ``0 .. seeds - 1``, ``(seeds, 4)`` keys (traced inside the
    programs that draw from them)."""
    return jax.vmap(lambda s: seed_keys(seed, s))(jnp.arange(seeds))


def seed_mean(errors: np.ndarray, stderrs: np.ndarray) -> tuple[float, float]:
    """Mean of per-seed estimates and its standard error
    (:func:`~bayes_slr.numerics.paired.teacher_mean`).

    With several seeds the spread across seeds (which contains each seed's Monte Carlo
    error) gives the standard error; it is floored by the pooled Monte Carlo error, so
    that a few seeds agreeing by chance cannot report less than the Monte Carlo noise.
    One seed: its Monte Carlo standard error.
    """
    return teacher_mean(errors, stderrs)


GivenData = tuple[Teacher | None, SLRBatch]
"""A given ``(teacher, training set)``; the teacher may be ``None`` (a user's data)."""


def erm_study(
    config: SLRConfig,
    settings: ERMSettings,
    seed: int,
    *,
    data: GivenData | None = None,
    test_set: SLRBatch | None = None,
) -> ERMSummary:
    """Train ERM on ``settings.seeds`` tasks, each from several starts, and report the test error.

    Seed ``s`` draws its teacher, training set, random starts and test samples from
    :func:`seed_keys` ``(seed, s)``. Every seed is trained from ``starts`` random starts
    (:func:`~bayes_slr.attention.training.initial_params`, ``k, v ~ N(0, 0.01 I_D)``) and from the
    informed start (the teacher) (:func:`~bayes_slr.attention.training.train_problems`: L-BFGS one
    problem after another, each to its own stopping rule; one-pass SGD all at once). The estimator
    of a seed is the random start with the lowest training objective: what a user without the
    teacher would pick; the informed start is a reference (it is the estimator only with
    ``init="informed"``). The test errors of all starts, of the zero predictor and of the oracle
    (the teacher's Bayes predictor with known directions) are measured on the same sequences;
    ``restarts_agree`` says whether the random starts' test errors lie within ``max(2 x Monte Carlo
    stderr, 1e-3)`` of each other, i.e. whether another start would have changed the reported number
    beyond its own error bar.

    ``lam="auto"`` chooses the ridge by validation on held-out training samples, neither the test
    samples nor the teacher taking part (:func:`_ridges`).

    Heads are an axis (:func:`with_heads`, docs/multihead.md section 7): ``student_heads`` heads
    from random starts on the task's teacher heads, each seed recording :func:`head_overlaps`.

    Parameters
    ----------
    config : the task; ``D`` is the dimension, ``Delta`` the label noise of the training data.
    settings : every other choice (:class:`~bayes_slr.attention.erm_settings.ERMSettings`:
        ``activation``, ``alpha`` (samples per dimension; with ``data`` it may be left out, it is
        then the given set's ``N / D``), ``lam``, ``seeds``, ``init``, ``starts``, ``optimizer``,
        ``N_test``, ``tol``, ``max_iter``, ``lam_grid``, ``validation_fraction``, ``patience``,
        ``exact_teacher``, ``predict_population``, ``student_heads``).
    seed : root seed of the teachers, training sets, starts and test sequences, ``>= 0``.
    data : a given ``(teacher, training set)`` instead of drawing them (``seeds = 1``): ERM on the
        data another estimator saw (the posterior command's comparison), or on a user's data
        (:mod:`bayes_slr.models.dataset`). The teacher may be ``None``: then there is no informed
        start (``init`` must be ``"random"``), no overlaps, no oracle, and ``test_set`` is
        required.
    test_set : held-out sequences to measure the test error on
        (:func:`~bayes_slr.models.scoring.held_out_error`) instead of ``N_test`` fresh sequences
        from the teacher (only with ``data``).

    Returns
    -------
    ERMSummary
        ``stderr`` combines the spread over seeds with the Monte Carlo error (:func:`seed_mean`).

    Raises
    ------
    ConfigError
        No ``alpha`` without data, or one that does not match it; given data that cannot be
        scored; ``lam="auto"`` with fewer than 2 training samples.
    """
    N = _training_count(config, settings.alpha, data)
    _check_given_data(data, test_set, settings)
    _check_training(config, settings, N)
    trainer = _Trainer.of(config, settings)
    teachers, batches = _training_sets(config, settings, seed, N, data)
    keys, starts = _starts(config, settings, seed, teachers)  # (random ones, informed one)
    candidates = starts[0] if settings.init == "random" else _broadcast(starts[1], (1,))
    lams, validation, coinciding = _ridges(trainer, settings, candidates, batches, N)
    trained = _train_every_start(trainer, settings, starts, batches, lams, coinciding)
    seeds = _seed_records(config, trainer, settings, trained, teachers, keys, test_set, validation)
    return _summary(seeds, settings, trained, has_teacher=teachers is not None)


def _seed_records(
    config: SLRConfig,
    trainer: _Trainer,
    settings: ERMSettings,
    trained: _Trained,
    teachers: Teacher | None,
    keys: jax.Array,
    test_set: SLRBatch | None,
    validation: list[RidgeValidation | None],
) -> tuple[ERMSeed, ...]:
    """The record of every seed (:func:`_seed_record`), each scored on its own test set."""
    return tuple(
        _seed_record(
            config,
            trainer,
            settings,
            s,
            trained,
            None
            if teachers is None
            else jax.tree_util.tree_map(lambda leaf: np.asarray(leaf)[s], teachers),
            (keys[s, 3], test_set),
            validation[s],
        )
        for s in range(settings.seeds)
    )


def _training_count(config: SLRConfig, alpha: float | None, data: GivenData | None) -> int:
    """``N``: ``round(alpha D)``, or the size of the given training set (which ``alpha``, when
    given, must match)."""
    if data is None:
        if alpha is None:
            raise ConfigError("alpha must be a number > 0 (samples per dimension), got None")
        return training_size(alpha, config.D)
    N = int(data[1].y.shape[0])
    if alpha is not None and training_size(alpha, config.D) != N:
        raise ConfigError(
            f"data: the given training set has {N} samples but round(alpha D) = "
            f"{training_size(alpha, config.D)}; they must match"
        )
    return N


def _check_given_data(
    data: GivenData | None, test_set: SLRBatch | None, settings: ERMSettings
) -> None:
    """Refuse given data that cannot be scored: several seeds, no teacher and no test set, or
    informed without a teacher.
    """
    if test_set is not None and data is None:
        raise ConfigError("test_set goes with given data (data=(teacher, training set))")
    if data is None:
        return
    if settings.seeds != 1:
        raise ConfigError(f"data: one given training set needs seeds = 1, got {settings.seeds}")
    if data[0] is not None:
        return
    if test_set is None:
        raise ConfigError(
            "data without a teacher needs a test_set of held-out sequences to measure the error on"
        )
    if settings.init != "random":
        raise ConfigError(
            "init must be random for data without a teacher (the informed start is the teacher)"
        )


def _check_training(config: SLRConfig, settings: ERMSettings, N: int) -> None:
    """Refuse ``lam="auto"`` with fewer than 2 training samples, and the informed start with heads
    (a student of heads has random starts only)."""
    if settings.lam_auto and N < 2:
        raise ConfigError(
            f"lam='auto' needs N = round(alpha D) >= 2 to hold samples out, got N = {N}"
        )
    if with_heads(config, settings) and settings.init != "random":
        raise ConfigError(
            f"init: {settings.init!r} is one-head only; with heads ERM reports the "
            "lowest-objective random start"
        )


def _training_sets(
    config: SLRConfig, settings: ERMSettings, seed: int, N: int, data: GivenData | None
) -> tuple[Teacher | None, SLRBatch]:
    """The teachers and training sets of every seed (leaves with leading axis ``seeds``): drawn
    from each seed's keys (:func:`seed_keys` of the root ``seed``), or the given ones
    (``teachers`` is ``None`` for data without one); the sets padded to their length bucket
    (:func:`padded_to_bucket`: one compiled trainer serves several ``L``)."""
    if data is None:
        return _drawn_sets(
            seed, config=config, seeds=settings.seeds, N=N, exact=settings.exact_teacher
        )
    teachers, batches = (
        jax.tree_util.tree_map(lambda leaf: jnp.asarray(leaf)[None], part) for part in data
    )
    return teachers, padded_to_bucket(batches)


@functools.partial(jax.jit, static_argnames=("config", "seeds", "N", "exact"))
def _drawn_sets(seed: int, *, config: SLRConfig, seeds: int, N: int, exact: bool):
    """The teachers and padded training sets drawn from every seed's keys (:func:`_training_sets`):
    one program for what were a few each."""
    keys = _every_seed_keys(seed, seeds)
    teachers = jax.vmap(lambda k: draw_task_teacher(k, config, exact=exact))(keys[:, 0])
    batches = jax.vmap(lambda k, t: simulate(k, config, t, N))(keys[:, 1], teachers)
    return teachers, padded_to_bucket(batches)


def _starts(
    config: SLRConfig, settings: ERMSettings, seed: int, teachers: Teacher | None
) -> tuple[np.ndarray, tuple[AttentionParams, AttentionParams | None]]:
    """Every seed's keys (:func:`seed_keys` of the root ``seed``, ``(seeds, 4)``), and the random
    starts (leaves ``(seeds, starts, ...)``) and the informed start of every seed (``(seeds,
    ...)``; ``None`` without a teacher, or with heads: :func:`with_heads`, whose starts are
    :func:`~bayes_slr.attention.estimators.random_heads`); one program, on the host after it."""
    heads = settings.student_heads if with_heads(config, settings) else None
    keys, random_starts, informed = jax.tree_util.tree_map(
        np.asarray,
        _start_params(
            seed, teachers, config=config, seeds=settings.seeds, starts=settings.starts, heads=heads
        ),
    )
    return keys, (random_starts, informed)


@functools.partial(jax.jit, static_argnames=("config", "seeds", "starts", "heads"))
def _start_params(
    seed: int,
    teachers: Teacher | None,
    *,
    config: SLRConfig,
    seeds: int,
    starts: int,
    heads: int | None,
):
    """:func:`_starts`: the keys, ``starts`` random starts of every seed (of ``heads`` student
    heads, or one head for ``None``) and the informed one (one head, with a teacher)."""
    keys = _every_seed_keys(seed, seeds)
    start_keys = jax.vmap(lambda k: jax.random.split(k, starts))(keys[:, 2])
    if heads is not None:
        start = functools.partial(random_heads, D=config.D, student_heads=heads)
        return keys, jax.vmap(jax.vmap(start))(start_keys), None
    random_starts = jax.vmap(jax.vmap(lambda k: initial_params(k, config, "random", None)))(
        start_keys
    )
    informed = (
        None
        if teachers is None
        else jax.vmap(lambda t: initial_params(None, config, "informed", t))(teachers)
    )
    return keys, random_starts, informed


def with_heads(config: SLRConfig, settings: ERMSettings) -> bool:
    """Whether the student is one of heads (leaves with a head axis, docs/multihead.md section
    7): several student heads, or a multi-head task (several teacher heads, or heads that may be
    absent). Else the one-head estimator, computed as it always was."""
    return settings.student_heads > 1 or config.multihead


def _ridges(
    trainer: _Trainer, settings: ERMSettings, candidates, batches: SLRBatch, N: int
) -> tuple[np.ndarray, list[RidgeValidation | None], np.ndarray]:
    """The ridge of every seed, its validation record and whether the candidates coincided
    there: ``settings.lam``, or with ``lam="auto"`` the grid value with the lowest validation
    error of the ``candidates`` (leaves ``(seeds, S, ...)``) trained on the first part of each
    training set (coinciding: :func:`_coinciding` at the chosen value of the path, else
    ``False``).

    With ``lam="auto"`` the last ``validation_fraction`` of the training set is held out; for
    each ``lam`` of ``lam_grid`` the candidate starts are trained on the rest, the
    lowest-loss one is scored by its mean ``(y - f)^2`` on the held-out samples, and the
    ``lam`` with the lowest score is refitted from all starts on the whole training set.
    Neither the test samples nor the teacher take part in the choice. With L-BFGS the grid
    is walked as a regularisation path from the largest ``lam`` down, warm-started, and
    stopped once every seed's validation error has been above its best for ``patience``
    values (:func:`_validation_path`; a path, not every ``lam`` from the starts, because a
    cold start at small ``lam`` costs hundreds of iterations: the same softmax point took
    390 s vectorised over the grid and 57 s as a path, choosing the same ``lam``); with
    one-pass SGD every ``lam`` is trained from the starts, vectorised over the grid.
    """
    seeds = settings.seeds
    if not settings.lam_auto:
        return np.full(seeds, settings.lam), [None] * seeds, np.zeros(seeds, bool)
    lam_grid = settings.lam_grid
    n_val = min(max(1, round(settings.validation_fraction * N)), N - 1)
    held_out, zeroed = _held_out(batches, n_val)
    coinciding = np.zeros((seeds, len(lam_grid)), bool)
    if get_optimizer(settings.optimizer).warm_path:
        # the refit's shapes (one compiled trainer for both): the held-out samples zeroed
        # (X = 0 predicts 0 = y, no residual, no gradient); the objective, divided by N
        # instead of N - n_val, is scaled by (N - n_val) / N, and so is the tolerance
        scores, coinciding = _validation_path(
            trainer._replace(tol=trainer.tol * (N - n_val) / N),
            candidates,
            zeroed,
            held_out,
            lam_grid,
            settings.patience,
        )
    else:  # every lam from the starts (one SGD pass each), vectorised over the grid
        params, values, _, _ = trainer(
            _broadcast(candidates, (len(lam_grid),)),
            jax.tree_util.tree_map(lambda a: a[:, : N - n_val], batches),
            jnp.broadcast_to(jnp.asarray(lam_grid), (seeds, len(lam_grid))),
        )
        scores = _scores(params, np.asarray(values), held_out, trainer.activation)
    chosen = np.argmin(np.where(np.isfinite(scores), scores, np.inf), axis=1)
    lams = np.asarray(lam_grid)[chosen]
    validation = [
        RidgeValidation(
            tuple(lam_grid), tuple(None if np.isnan(x) else float(x) for x in row), n_val
        )
        for row in scores
    ]
    return lams, validation, coinciding[np.arange(seeds), chosen]


@functools.partial(jax.jit, static_argnames=("n_val",))
def _held_out(batches: SLRBatch, n_val: int) -> tuple[SLRBatch, SLRBatch]:
    """The last ``n_val`` samples of every training set, and the sets with those samples'
    tokens and labels zeroed (one program for what were a dozen array operations)."""
    cut = batches.y.shape[1] - n_val
    held_out = jax.tree_util.tree_map(lambda a: a[:, cut:], batches)
    zeroed = batches._replace(X=batches.X.at[:, cut:].set(0.0), y=batches.y.at[:, cut:].set(0.0))
    return held_out, zeroed


class _Trained(NamedTuple):
    """Every start of every seed trained at its seed's ridge: ``params`` leaves ``(seeds, starts
    [+ 1], ...)`` (the random starts, then the informed one when there is a teacher), training
    objective ``values``, ``grad_norms`` and ``iterations`` ``(seeds, starts [+ 1])``, the
    ``selected`` start of each seed, the ``lams``, and ``fit_of`` ``(seeds, starts [+ 1])``: the
    start whose fit each start reports (itself, or the first where the starts coincided and
    share its refit, :func:`_train_every_start`); numpy arrays (the per-seed bookkeeping runs
    on the host, without an array program per leaf and seed)."""

    params: AttentionParams
    values: np.ndarray
    grad_norms: np.ndarray
    iterations: np.ndarray
    selected: np.ndarray
    lams: np.ndarray
    fit_of: np.ndarray


def _train_every_start(
    trainer: _Trainer,
    settings: ERMSettings,
    starts: tuple[AttentionParams, AttentionParams | None],
    batches: SLRBatch,
    lams: np.ndarray,
    coinciding: np.ndarray,
) -> _Trained:
    """Train the random starts and the informed start (``starts``) of every seed on its whole
    training set at its ridge, and select the estimator: the lowest-training-loss random start
    (or the informed start with ``init="informed"``).

    Where every random start reached one solution at the chosen ridge on the validation path
    (``coinciding``, :func:`_coinciding`: the objective showed one minimum there), only the
    first is refitted and the others share its fit (they would reach the same minimum, within
    :data:`DUPLICATE_TOLERANCE`; the first start's fit is the one it had trained alongside
    them, bit for bit)."""
    random_starts, informed = starts
    count = settings.starts
    all_starts = (
        random_starts
        if informed is None
        else jax.tree_util.tree_map(
            lambda r, i: np.concatenate([r, np.asarray(i)[:, None]], axis=1),
            random_starts,
            informed,
        )
    )
    shared = np.zeros((settings.seeds, jax.tree_util.tree_leaves(all_starts)[0].shape[1]), bool)
    shared[:, 1:count] = coinciding[:, None]
    params, values, grad_norms, counts = trainer(
        _broadcast(all_starts, (1,)), batches, np.asarray(lams)[:, None], ~shared[:, None]
    )
    params, values, grad_norms, counts = (
        jax.tree_util.tree_map(
            lambda leaf: np.where(
                shared.reshape(shared.shape + (1,) * (leaf.ndim - 3)),
                np.asarray(leaf)[:, 0, :1],
                np.asarray(leaf)[:, 0],
            ),
            part,
        )
        for part in (params, values, grad_norms, counts)
    )
    selected = (
        _lowest(values[:, :count]) if settings.init == "random" else np.full(settings.seeds, count)
    )
    fit_of = np.where(shared, 0, np.arange(shared.shape[1]))
    return _Trained(params, values, grad_norms, counts, selected, lams, fit_of)


def _test_errors(
    config: SLRConfig,
    settings: ERMSettings,
    fits: AttentionParams,
    activation: str,
    teacher: Teacher | None,
    test: tuple[jax.Array, SLRBatch | None],
    chosen: int,
    fit_of: np.ndarray,
):
    """Every start's test error on the seed's test set (:func:`_test_sequences`;
    :func:`_start_test_errors`, the ``chosen`` start paired with the zero predictor and the
    oracle), each start whose fit is another's (``fit_of``: the start whose fit each one reports,
    :class:`_Trained`) given that one's figures: the distinct fits alone are scored, and a start
    sharing a fit has its numbers, as scoring the same parameters twice on the same sequences
    gives (where the test sequences are drawn in the span of the fits, it is the span of the
    distinct ones)."""
    distinct, position = np.unique(fit_of, return_inverse=True)
    score, scored_fits, task = _test_sequences(
        config, settings, jax.tree_util.tree_map(lambda leaf: leaf[distinct], fits), teacher, test
    )
    errors, stderrs, zero, oracle, paired = _start_test_errors(
        score, scored_fits, activation, task, int(position[chosen])
    )
    return errors[position], stderrs[position], zero, oracle, paired


def _test_sequences(
    config: SLRConfig,
    settings: ERMSettings,
    fits: AttentionParams,
    teacher: Teacher | None,
    test: tuple[jax.Array, SLRBatch | None],
) -> tuple[Scorer, AttentionParams, tuple[SLRConfig, Teacher] | None]:
    """The scorer of the seed's test set, the ``fits`` as it reads them and the task of its
    oracle (``None`` without a teacher): the given held-out sequences, or ``N_test`` fresh
    sequences of its teacher from the key of ``test`` ``(key, test_set)``, drawn in the span of
    the teacher and the fits (:func:`~bayes_slr.attention.span.span_reduction`: the same law of
    every prediction and label, ``2 + 2 S`` numbers a token instead of ``D``), coordinate by
    coordinate, the teacher's first: the zero predictor and the oracle read those alone, so they
    score the same on the sequences of every point of the same key (every activation of a
    ``gap`` teacher), whatever its count of distinct fits."""
    key, test_set = test
    if test_set is not None:
        task = None if teacher is None else (config, teacher)
        return held_out_scorer(config, test_set), fits, task
    if with_heads(config, settings):  # the span of one-head fits only
        return fresh_sample_scorer(key, config, teacher, settings.N_test), fits, (config, teacher)
    small_config, small_teacher, small_fits = span_reduction(config, teacher, fits)
    score = fresh_sample_scorer(
        key, small_config, small_teacher, settings.N_test, coordinates_first=True
    )
    return score, small_fits, (small_config, small_teacher)


def _seed_record(
    config: SLRConfig,
    trainer: _Trainer,
    settings: ERMSettings,
    s: int,
    trained: _Trained,
    teacher: Teacher | None,
    test: tuple[jax.Array, SLRBatch | None],
    validation: RidgeValidation | None,
) -> ERMSeed:
    """The per-seed record of :class:`ERMSummary` (its ``per_seed`` entries): every start, the
    zero predictor and the oracle scored on seed ``s``'s test set (``test``: its key and the
    given held-out sequences, :func:`_test_errors`)."""
    starts, tol = settings.starts, settings.tol
    fits = jax.tree_util.tree_map(lambda leaf: leaf[s], trained.params)
    chosen = int(trained.selected[s])
    errors, stderrs, zero, oracle, paired = _test_errors(
        config, settings, fits, trainer.activation, teacher, test, chosen, trained.fit_of[s]
    )
    fitted = jax.tree_util.tree_map(lambda leaf: leaf[chosen], fits)
    heads = with_heads(config, settings)
    fitted_overlaps = None if teacher is None or heads else FitOverlaps(**overlaps(fitted, teacher))
    spread = float(np.ptp(errors[:starts]))
    tolerance = max(2.0 * float(stderrs[chosen]), AGREEMENT_FLOOR)
    values, grad_norms = trained.values[s], trained.grad_norms[s]
    return ERMSeed(
        seed=s,
        lam=float(trained.lams[s]),
        test_error=float(errors[chosen]),
        stderr=float(stderrs[chosen]),
        train_loss=float(values[chosen]),
        grad_norm=float(grad_norms[chosen]),
        iterations=int(trained.iterations[s, chosen]),
        converged=bool(grad_norms[chosen] <= tol),
        overlaps=fitted_overlaps,
        predicted_population_error=(
            predicted_population_error(trainer.activation, config, fitted_overlaps)
            if settings.predict_population and fitted_overlaps is not None
            else None
        ),
        selected_start="informed" if chosen == starts else chosen,
        starts=RandomStarts(
            tuple(float(x) for x in errors[:starts]),
            tuple(float(x) for x in values[:starts]),
            tuple(bool(g <= tol) for g in grad_norms[:starts]),
        ),
        start_spread=spread,
        agreement_tolerance=tolerance,
        restarts_agree=None if starts == 1 else bool(np.isfinite(spread) and spread <= tolerance),
        informed=None
        if teacher is None or heads
        else StartFigures(
            float(errors[starts]),
            float(stderrs[starts]),
            float(values[starts]),
            bool(grad_norms[starts] <= tol),
        ),
        zero_error=zero.value,
        zero_stderr=zero.stderr,
        oracle=None if oracle is None else OracleError(oracle.value, oracle.stderr),
        validation=validation,
        minus_zero=paired["zero"],
        minus_oracle=paired.get("oracle"),
        head_overlaps=head_overlaps(fitted, teacher) if heads and teacher is not None else None,
    )


def _start_test_errors(
    score: Scorer, fits, activation: str, task: tuple[SLRConfig, Teacher] | None, chosen: int
):
    """Test errors (values, stderrs) of every start (leading axis of ``fits``), the zero
    predictor's and the oracle's (``None`` without a ``task``: config and teacher), on the same
    sequences, and the ``chosen`` start minus each of those two, paired per sequence
    (:class:`~bayes_slr.numerics.paired.PairedDifference` keyed ``"zero"``, ``"oracle"``).
    """
    starts = jax.tree_util.tree_leaves(fits)[0].shape[0]
    config, teacher = (None, None) if task is None else task
    references = ("zero",) if task is None else ("zero", "oracle")

    def every_start(X, lengths):
        return _every_prediction(fits, X, lengths, teacher, activation=activation, config=config)

    errors = score(every_start, pairs=[(str(chosen), name) for name in references])
    per_start = [errors[str(i)] for i in range(starts)]
    paired = {}
    for name in references:
        difference = errors[difference_name(str(chosen), name)]
        paired[name] = PairedDifference(difference.value, difference.stderr, 1)
    return (
        np.array([e.value for e in per_start]),
        np.array([e.stderr for e in per_start]),
        errors["zero"],
        errors.get("oracle"),
        paired,
    )


@functools.partial(jax.jit, static_argnames=("activation", "config"))
def _every_prediction(
    fits: AttentionParams,
    X: jax.Array,
    lengths: jax.Array,
    teacher: Teacher | None,
    *,
    activation: str,
    config: SLRConfig | None,
) -> dict[str, jax.Array]:
    """The predictions of every fit (leading axis of ``fits``; keyed by its index), the zero
    predictor's and, with a ``config`` and ``teacher``, the oracle's on the tokens ``X``: one
    program a chunk of test sequences."""
    predictions = jax.vmap(lambda p: predict(p, X, lengths, activation))(fits)
    out = {str(i): predictions[i] for i in range(predictions.shape[0])}
    out["zero"] = zero_predictor(X, lengths)
    if config is not None:
        out["oracle"] = known_directions_predictor(config, teacher)(X, lengths)
    return out


def _summary(
    per_seed: tuple[ERMSeed, ...], settings: ERMSettings, trained: _Trained, *, has_teacher: bool
) -> ERMSummary:
    """The summary over seeds (:class:`ERMSummary`)."""
    mean, stderr = seed_mean(
        np.array([r.test_error for r in per_seed]), np.array([r.stderr for r in per_seed])
    )
    oracle_error, oracle_stderr = (
        seed_mean(
            np.array([r.oracle.test_error for r in per_seed]),
            np.array([r.oracle.stderr for r in per_seed]),
        )
        if has_teacher
        else (None, None)
    )
    seeds = settings.seeds
    return ERMSummary(
        mean,
        stderr,
        per_seed,
        restarts_agree=None if settings.starts == 1 else all(r.restarts_agree for r in per_seed),
        lam=tuple(float(x) for x in trained.lams),
        zero_error=float(np.mean([r.zero_error for r in per_seed])),
        informed_test_error=(
            float(np.mean([r.informed.test_error for r in per_seed]))
            if per_seed[0].informed is not None
            else None
        ),
        notes=tuple(_notes(per_seed, settings)),
        params=jax.tree_util.tree_map(
            lambda leaf: jnp.asarray(leaf[np.arange(seeds), trained.selected]), trained.params
        ),
        oracle_error=oracle_error,
        oracle_stderr=oracle_stderr,
    )


def _notes(per_seed: tuple[ERMSeed, ...], settings: ERMSettings) -> list[str]:
    """The sentences that must accompany an ERM number."""
    notes = []
    disagree = [r for r in per_seed if r.restarts_agree is False]
    if disagree:
        worst = max(disagree, key=lambda r: r.start_spread)
        notes.append(
            f"random starts disagree at {len(disagree)} of {len(per_seed)} seeds (test errors "
            f"spread up to {worst.start_spread:.3g}, tolerance "
            f"{worst.agreement_tolerance:.2g}): the landscape is non-convex here; the "
            "lowest-training-loss start is reported"
        )
    unconverged = [r.seed for r in per_seed if not r.converged]
    if unconverged:
        notes.append(
            f"the reported fit did not reach |grad| <= {settings.tol:g} at seeds {unconverged}"
        )
    lam_grid = settings.lam_grid
    if settings.lam_auto and len(lam_grid) > 1:
        edges = sorted({r.lam for r in per_seed if r.lam in (min(lam_grid), max(lam_grid))})
        if edges:
            notes.append(
                f"lam chosen at the edge of the grid ({', '.join(f'{x:g}' for x in edges)}): "
                f"the best ridge may lie beyond it"
            )
    return notes


def predicted_population_error(
    activation: str, config: SLRConfig, fitted_overlaps: FitOverlaps
) -> float:
    """Population error (docs/model.md section 4) predicted from the overlaps of a fit.

    docs/model.md's formula assumes ``|k*|^2 = |v*|^2 = D``. A teacher with
    ``rho_k = |k*|^2/D`` and ``rho_v = |v*|^2/D`` is rescaled onto it exactly: with
    ``chi*' = chi*/sqrt(rho_k)`` and ``z*' = z*/sqrt(rho_v)`` standard, the location law
    has ``c_nu' = c_nu sqrt(rho_k)`` (``nu' = nu rho_k`` spiked, ``nu sqrt(rho_k)`` max),
    the key overlap is ``m_k / sqrt(rho_k)`` (``q_k`` unchanged), and the error is
    ``rho_v`` times that of the value overlaps ``m_v / rho_v``, ``q_v / rho_v``. What is
    left out are the cross overlaps (``k.v*``, ``v.k*``, ``k.v``, ``k*.v*``): the finite-``D``
    effect.
    ``nan`` if a fit diverged (non-finite overlaps).
    """
    o = fitted_overlaps
    if not all(np.isfinite(value) for value in o.to_dict().values()):
        return float("nan")  # a diverged fit: its test error is reported as it is
    rho_k, rho_v = o.rho_k, o.rho_v
    nu = config.law.nu_with_c(config.c_nu * np.sqrt(rho_k))
    error = population_error(
        activation,
        config.replace(nu=float(nu)),
        o.m_k / np.sqrt(rho_k),
        o.q_k,
        o.m_v / rho_v,
        o.q_v / rho_v,
        c=o.c,
    )
    return float(rho_v * error)


def _cosines(student: np.ndarray, teacher: np.ndarray) -> np.ndarray:
    """``H_s x H`` cosines between the rows of ``student`` and ``teacher`` (0 for a zero row)."""
    norms = np.linalg.norm(student, axis=1)[:, None] * np.linalg.norm(teacher, axis=1)[None, :]
    dots = student @ teacher.T
    return np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)


def head_overlaps(params: AttentionParams, teacher: Teacher) -> HeadOverlaps:
    """The overlaps of an ``H_s``-head fit with the teacher heads and the permutation it found
    (:class:`~bayes_slr.studies.erm_records.HeadOverlaps`; a one-head teacher is one head)."""
    from scipy.optimize import linear_sum_assignment

    k, v = np.asarray(params.k, float), np.asarray(params.v, float)
    k_star = np.atleast_2d(np.asarray(teacher.k_star, float))
    v_star = np.atleast_2d(np.asarray(teacher.v_star, float))
    D = k.shape[-1]
    cosine_k, cosine_v = _cosines(k, k_star), _cosines(v, v_star)
    rows, cols = linear_sum_assignment(np.abs(cosine_k) + np.abs(cosine_v), maximize=True)
    permutation: list[int | None] = [None] * k.shape[0]
    for row, col in zip(rows, cols, strict=True):
        permutation[int(row)] = int(col)

    def matrix(values: np.ndarray) -> tuple[tuple[float, ...], ...]:
        return tuple(tuple(float(x) for x in row) for row in values)

    return HeadOverlaps(
        m_k=matrix(k @ k_star.T / D),
        m_v=matrix(v @ v_star.T / D),
        q_k=tuple(float(x) for x in np.sum(k**2, axis=1) / D),
        q_v=tuple(float(x) for x in np.sum(v**2, axis=1) / D),
        c=tuple(float(x) for x in np.atleast_1d(np.asarray(params.c, float))),
        cosine_k=matrix(cosine_k),
        cosine_v=matrix(cosine_v),
        permutation=tuple(permutation),
    )

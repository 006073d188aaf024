"""ERM experiments: training over several seeds at once, and test error on fresh samples.

:func:`fit_erm` (one training set) lives in :mod:`bayes_slr.attention.training` and is
re-exported here. :func:`erm_experiment` draws a teacher and ``N = round(alpha D)``
training samples per seed, trains all seeds together (``jax.vmap``), and reports the
test error of each fit (fresh samples, Monte Carlo) beside the population error that
docs/model.md section 4 predicts from its overlaps.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayes_slr.attention.activations import check_activation
from bayes_slr.attention.estimators import AttentionParams, attention_predictor, overlaps, predict
from bayes_slr.attention.training import (
    ERMFit,
    check_training_options,
    default_learning_rate,
    fit_erm,
    initial_params,
    train,
)
from bayes_slr.errors import ConfigError, check_int, check_real
from bayes_slr.experiments.task import LAM_AUTO, check_lam
from bayes_slr.models.scoring import (
    Scorer,
    excess_test_error,
    fresh_sample_scorer,
    held_out_scorer,
    zero_predictor,
)
from bayes_slr.models.simulate import SLRBatch, Teacher, draw_teacher, simulate
from bayes_slr.models.spec import SLRConfig, training_size
from bayes_slr.theory.population import population_error

__all__ = [
    "DEFAULT_LAM_GRID",
    "ERMFit",
    "ERMSummary",
    "LAM_AUTO",
    "check_lam",
    "erm_experiment",
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
    check_activation(activation)
    N_test = check_int("N_test", N_test, 2)
    if jnp.shape(params.k)[-1] != config.D:
        raise ConfigError(
            f"params have D = {jnp.shape(params.k)[-1]} but config.D = {config.D}; they must match"
        )
    result = excess_test_error(
        key, config, teacher, attention_predictor(params, activation), N_test=N_test
    )
    return result.value, result.stderr


DEFAULT_LAM_GRID = tuple(float(x) for x in np.logspace(-3, 2, 11))
"""Ridge values tried by ``lam="auto"``: ``1e-3 .. 100``, two per decade (the ridge of the sum
objective of docs/model.md section 5, so the same ``lam`` means the same prior at any ``N``). The
top reaches 100 because with ``1e-3 .. 10`` linear attention at spiked ``nu = 2``, ``L = 5``,
``D = 100``, ``alpha = 16`` chose the edge 10 for two of four seeds; large values cost few
iterations (the path starts there)."""
VALIDATION_FRACTION = 0.2
"""Share of the training set held out to choose ``lam`` (the last samples; they are i.i.d.)."""
VALIDATION_PATIENCE = 2
"""``lam="auto"`` with L-BFGS stops descending the grid once the validation error has been
above its best for this many consecutive values (:func:`_validation_path`)."""
DEFAULT_STARTS = 4
"""Random starts per training set (plus the informed start, a reference only)."""
AGREEMENT_FLOOR = 1e-3
"""Smallest tolerance of ``restarts_agree``: far above the spread of test errors between
starts that reach the same minimum (measured below 1e-5 at ``|grad| <= 1e-6``), far below
the third decimal that a table shows."""


class ERMSummary(NamedTuple):
    """Result of :func:`erm_experiment`.

    Attributes
    ----------
    test_error : mean over seeds of the per-seed test error of the selected start.
    stderr : its standard error (see :func:`erm_experiment`).
    per_seed : one dict per seed: ``seed``, ``lam`` (given or chosen), ``test_error``,
        ``stderr`` (Monte Carlo), ``train_loss``, ``grad_norm``, ``iterations``,
        ``converged``, ``overlaps`` (:func:`~bayes_slr.attention.estimators.overlaps`) and
        ``predicted_population_error`` (docs/model.md section 4 at those overlaps, rescaled for
        the teacher norms: :func:`predicted_population_error`; ``None`` if not asked for),
        all of the selected start; ``selected_start``; ``starts`` (``test_error``,
        ``train_loss``, ``converged`` of every random start); ``start_spread`` (largest minus
        smallest test error over the random starts), ``agreement_tolerance``,
        ``restarts_agree`` (``None`` with one random start); ``informed`` (the same figures
        from the informed start, a reference never selected unless ``init="informed"``);
        ``zero_error`` and ``zero_stderr`` (the zero predictor, ``E[z*^2]``, on the same test
        samples: ``|v*|^2/D``, not exactly 1 for a teacher drawn from the prior);
        ``validation`` (``lam="auto"``: the grid, the validation error of each ``lam``, the
        number of held-out samples; else ``None``).
    restarts_agree : all seeds' ``restarts_agree`` (``None`` with one random start).
    lam : the ``lam`` of each seed.
    zero_error : mean over seeds of ``zero_error``.
    informed_test_error : mean over seeds of the informed start's test error (``None`` for given
    data
        without a teacher: no informed start, and ``overlaps``, ``informed`` are ``None`` per seed).
    notes : sentences a reader must see with the number (disagreeing restarts, no
        convergence, a ``lam`` chosen at the edge of the grid).
    params : the selected fit of every seed (leaves with leading axis ``seeds``), to score it
        again beside other predictors (:func:`~bayes_slr.attention.estimators.attention_predictor`).
    """

    test_error: float
    stderr: float
    per_seed: list[dict[str, Any]]
    restarts_agree: bool | None = None
    lam: tuple[float, ...] = ()
    zero_error: float = float("nan")
    informed_test_error: float | None = float("nan")
    notes: tuple[str, ...] = ()
    params: AttentionParams | None = None


@functools.partial(jax.jit, static_argnames=("activation", "optimizer"))
def _train_batch(
    starts, X, lengths, y, lams, tol, max_iter, learning_rate, *, activation, optimizer
):
    """Train every start at every ``lam`` of every seed, as one vectorised computation.

    ``starts`` leaves have leading axes ``(seeds, G, S)``, ``X, lengths, y`` ``(seeds, ...)``,
    ``lams`` ``(seeds, G)``. The ``G x S`` problems of a seed share its data, so their
    projections ``X @ [k, v]`` are one matrix product (the tokens are read once per step).
    """

    def one(params, X_s, lengths_s, y_s, lam):
        return train(
            params,
            X_s,
            lengths_s,
            y_s,
            activation=activation,
            optimizer=optimizer,
            lam=lam,
            tol=tol,
            max_iter=max_iter,
            learning_rate=learning_rate,
        )

    over_starts = jax.vmap(one, in_axes=(0, None, None, None, None))
    over_grid = jax.vmap(over_starts, in_axes=(0, None, None, None, 0))
    return jax.vmap(over_grid)(starts, X, lengths, y, lams)


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
    best = _lowest(values)  # (seeds, G)
    index = jnp.asarray(best)
    chosen = jax.tree_util.tree_map(
        lambda leaf: jnp.take_along_axis(
            leaf, index.reshape(index.shape + (1,) * (leaf.ndim - 2)), axis=2
        )[:, :, 0],
        params,
    )
    scores = np.asarray(
        _validation_errors(chosen, held_out.X, held_out.lengths, held_out.y, activation)
    )
    return np.where(np.isfinite(scores) & np.any(np.isfinite(values), axis=-1), scores, np.inf)


def _validation_path(
    candidates,
    fit_part,
    held_out,
    lam_grid,
    scores,
    tol,
    max_iter,
    learning_rate,
    activation,
    optimizer,
    patience,
):
    """Validation errors along the regularisation path (L-BFGS), from the largest ``lam`` down.

    Each ``lam`` starts every candidate at its solution for the previous (larger) ``lam``
    (a diverged solution is not handed on: that candidate keeps its previous start): the solution
    moves little between
    neighbouring values, so a step costs tens of iterations where a cold start at small
    ``lam`` costs hundreds. The path stops once every seed's validation error has been
    above its best for ``patience`` consecutive values: the smaller values, the slowest to
    fit (the ridge is what conditions the flat directions of the objective), are then
    left out (``nan`` in ``scores``).
    """
    order = np.argsort(lam_grid)[::-1]
    current = _broadcast(candidates, (1,))
    worse = np.zeros(scores.shape[0], int)
    for position in order:
        lams = jnp.full((scores.shape[0], 1), lam_grid[position])
        params, values, _, _ = _train_batch(
            current,
            fit_part.X,
            fit_part.lengths,
            fit_part.y,
            lams,
            tol,
            max_iter,
            learning_rate,
            activation=activation,
            optimizer=optimizer,
        )
        values = np.asarray(values)
        scores[:, position] = _scores(params, values, held_out, activation)[:, 0]
        finite = jnp.asarray(np.isfinite(values))
        current = jax.tree_util.tree_map(
            lambda new, old: jnp.where(
                finite.reshape(finite.shape + (1,) * (new.ndim - 3)), new, old
            ),
            params,
            current,
        )
        best = np.min(np.where(np.isfinite(scores), scores, np.inf), axis=1)
        worse = np.where(scores[:, position] > best, worse + 1, 0)
        if np.all(worse >= patience):
            break
    return scores


def _broadcast(tree, shape):
    """Repeat the leaves of ``tree`` (leading axis ``seeds``) over new axes ``shape`` after it."""
    return jax.tree_util.tree_map(
        lambda leaf: jnp.broadcast_to(
            leaf.reshape(leaf.shape[:1] + (1,) * len(shape) + leaf.shape[1:]),
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


def seed_mean(errors: np.ndarray, stderrs: np.ndarray) -> tuple[float, float]:
    """Mean of per-seed estimates and its standard error.

    With several seeds the spread across seeds (which contains each seed's Monte Carlo
    error) gives the standard error; it is floored by the pooled Monte Carlo error, so
    that a few seeds agreeing by chance cannot report less than the Monte Carlo noise.
    One seed: its Monte Carlo standard error.
    """
    errors, stderrs = np.asarray(errors, float), np.asarray(stderrs, float)
    seeds = errors.size
    pooled_mc = float(np.mean(stderrs**2) / seeds)
    if seeds == 1:
        return float(errors[0]), float(stderrs[0])
    return float(errors.mean()), float(np.sqrt(max(errors.var(ddof=1) / seeds, pooled_mc)))


def erm_experiment(
    config: SLRConfig,
    activation: str,
    *,
    alpha: float,
    lam: float | str,
    seeds: int,
    seed: int = 0,
    init: str = "random",
    starts: int = DEFAULT_STARTS,
    optimizer: str = "lbfgs",
    N_test: int = 20_000,
    tol: float = 1e-6,
    max_iter: int = 2000,
    exact_teacher: bool = False,
    predict_population: bool = True,
    lam_grid: tuple[float, ...] = DEFAULT_LAM_GRID,
    validation_fraction: float = VALIDATION_FRACTION,
    patience: int = VALIDATION_PATIENCE,
    data: tuple[Teacher | None, SLRBatch] | None = None,
    test_set: SLRBatch | None = None,
) -> ERMSummary:
    """Train ERM on ``seeds`` independent tasks, each from several starts, and report the test
    error.

    Seed ``s`` draws its teacher, training set, random starts and test samples from
    :func:`seed_keys` ``(seed, s)``. Every seed is trained from ``starts`` random starts
    (:func:`~bayes_slr.attention.training.initial_params`, ``k, v ~ N(0, 0.01 I_D)``) and from
    the informed start (the teacher), all at once (``jax.vmap`` over seeds, ``lam`` values and
    starts). The estimator of a seed is the random start with the lowest training objective:
    what a user without the teacher would pick; the informed start is a reference (it is the
    estimator only with ``init="informed"``). The test errors of all starts are measured on
    the same fresh samples; ``restarts_agree`` says whether the random starts' test errors
    lie within ``max(2 x Monte Carlo stderr, 1e-3)`` of each other, i.e. whether another
    start would have changed the reported number beyond its own error bar.

    ``lam="auto"``: the last ``validation_fraction`` of the training set is held out; for
    each ``lam`` of ``lam_grid`` the candidate starts are trained on the rest, the
    lowest-loss one is scored by its mean ``(y - f)^2`` on the held-out samples, and the
    ``lam`` with the lowest score is refitted from all starts on the whole training set.
    Neither the test samples nor the teacher take part in the choice. With L-BFGS the grid
    is walked as a regularisation path from the largest ``lam`` down, warm-started, and
    stopped ``patience`` values past the best (:func:`_validation_path`: vectorised over
    seeds and starts, not over the grid, because a cold start at small ``lam`` costs
    hundreds of iterations and a vectorised loop runs as long as its slowest member; the
    same softmax point took 390 s vectorised over the grid and 57 s as a path, choosing the
    same ``lam``); with one-pass SGD every ``lam`` is trained from the starts, vectorised
    over the grid.

    Parameters
    ----------
    config : SLRConfig
        The task; ``D`` is the dimension, ``Delta`` the label noise of the training data.
    activation : str
        ``softmax``, ``linear``, ``erf`` or ``softplus``.
    alpha : float
        Samples per dimension, ``> 0``: ``N = round(alpha D) >= 1``
        (:func:`~bayes_slr.models.spec.training_size`).
    lam : float or "auto"
        Ridge strength ``>= 0``, or chosen by held-out validation on ``lam_grid``.
    seeds : int
        Number of independent teachers and training sets, ``>= 1``.
    seed : int
        Root seed.
    init : {"random", "informed"}
        Which start is the estimator: the best random start (default) or the teacher.
    starts : int
        Random starts per training set, ``>= 1``.
    optimizer, tol, max_iter :
        As in :func:`fit_erm`.
    N_test : int
        Fresh test samples per seed, ``>= 2``.
    exact_teacher : bool
        ``False`` (default): teachers from the prior ``N(0, I_D)``. ``True``: the
        population limit ``|k*|^2 = |v*|^2 = D``, ``k* . v* = 0``, which removes the
        teacher-norm part of the finite-``D`` fluctuation.
    predict_population : bool
        Whether to evaluate ``predicted_population_error`` per seed (quadrature; slow for
        softmax on max-SLR with ``nu = inf`` at large key norms). ``False`` records ``None``.
    lam_grid : values tried by ``lam="auto"`` (each ``>= 0``).
    validation_fraction : share held out by ``lam="auto"``, in ``(0, 1)``; at least one
        sample is held out and one kept.
    patience : see :data:`VALIDATION_PATIENCE` (``>= 1``; ``len(lam_grid)`` walks the whole grid).
    data : a given ``(teacher, training set)`` instead of drawing them (``seeds = 1``): ERM on the
        data another estimator saw (the posterior command's comparison), or on a user's data
        (:mod:`bayes_slr.models.dataset`). The teacher may be ``None``: then there is no informed
        start (``init`` must be ``"random"``), no overlaps, and ``test_set`` is required.
    test_set : held-out sequences to measure the test error on
    (:func:`~bayes_slr.models.scoring.held_out_error`)
        instead of ``N_test`` fresh sequences from the teacher (only with ``data``).

    Returns
    -------
    ERMSummary
        ``stderr`` combines the spread over seeds with the Monte Carlo error (:func:`seed_mean`).
    """
    lam = check_lam(lam)
    check_training_options(
        activation, 0.0 if lam == LAM_AUTO else lam, optimizer, init, tol, max_iter
    )
    alpha = check_real("alpha", alpha, minimum=0.0, strict=True)
    seeds = check_int("seeds", seeds, 1)
    seed = check_int("seed", seed, 0)
    starts = check_int("starts", starts, 1)
    patience = check_int("patience", patience, 1)
    N_test = check_int("N_test", N_test, 2)
    N = training_size(alpha, config.D)
    _check_given_data(data, test_set, init)
    if lam == LAM_AUTO:
        lam_grid = tuple(check_real("lam_grid", value, minimum=0.0) for value in lam_grid)
        if not lam_grid:
            raise ConfigError("lam_grid must hold at least one value")
        validation_fraction = check_real(
            "validation_fraction", validation_fraction, minimum=0.0, strict=True
        )
        if validation_fraction >= 1.0:
            raise ConfigError(f"validation_fraction must be < 1, got {validation_fraction!r}")
        if N < 2:
            raise ConfigError(
                f"lam='auto' needs N = round(alpha D) >= 2 to hold samples out, got N = {N}"
            )
    learning_rate = default_learning_rate(config, activation)

    keys = jax.vmap(lambda s: seed_keys(seed, s))(jnp.arange(seeds))
    if data is None:
        teachers = jax.vmap(lambda k: draw_teacher(k, config.D, exact=exact_teacher))(keys[:, 0])
        batches = jax.vmap(lambda k, t: simulate(k, config, t, N))(keys[:, 1], teachers)
    else:
        if seeds != 1 or data[1].y.shape[0] != N:
            raise ConfigError(
                f"data: one given training set needs seeds = 1 and N = round(alpha D) = {N} samples"
            )
        teachers, batches = (
            jax.tree_util.tree_map(lambda leaf: jnp.asarray(leaf)[None], part) for part in data
        )
    start_keys = jax.vmap(lambda k: jax.random.split(k, starts))(keys[:, 2])
    random_starts = jax.vmap(jax.vmap(lambda k: initial_params(k, config, "random", None)))(
        start_keys
    )
    informed = (
        None
        if teachers is None
        else jax.vmap(lambda t: initial_params(None, config, "informed", t))(teachers)
    )
    candidates = random_starts if init == "random" else _broadcast(informed, (1,))

    validation = [None] * seeds
    if lam == LAM_AUTO:
        n_val = min(max(1, round(validation_fraction * N)), N - 1)
        fit_part = jax.tree_util.tree_map(lambda a: a[:, : N - n_val], batches)
        held_out = jax.tree_util.tree_map(lambda a: a[:, N - n_val :], batches)
        scores = np.full((seeds, len(lam_grid)), np.nan)
        if optimizer == "lbfgs":
            scores = _validation_path(
                candidates,
                fit_part,
                held_out,
                lam_grid,
                scores,
                tol,
                max_iter,
                learning_rate,
                activation,
                optimizer,
                patience,
            )
        else:  # one SGD pass per lam from the starts, vectorised over the grid
            params, values, _, _ = _train_batch(
                _broadcast(candidates, (len(lam_grid),)),
                fit_part.X,
                fit_part.lengths,
                fit_part.y,
                jnp.broadcast_to(jnp.asarray(lam_grid), (seeds, len(lam_grid))),
                tol,
                max_iter,
                learning_rate,
                activation=activation,
                optimizer=optimizer,
            )
            scores = _scores(params, np.asarray(values), held_out, activation)
        ranked = np.where(np.isfinite(scores), scores, np.inf)
        lams = np.array([lam_grid[int(np.argmin(row))] for row in ranked])
        validation = [
            {
                "lam_grid": list(lam_grid),
                "validation_error": [None if np.isnan(x) else float(x) for x in row],
                "n_validation": n_val,
            }
            for row in scores
        ]
    else:
        lams = np.full(seeds, lam)

    all_starts = (
        random_starts
        if informed is None
        else jax.tree_util.tree_map(
            lambda r, i: jnp.concatenate([r, i[:, None]], axis=1), random_starts, informed
        )
    )  # (seeds, starts + 1): the random starts, then the informed one (when there is a teacher)
    params, values, grad_norms, counts = _train_batch(
        _broadcast(all_starts, (1,)),
        batches.X,
        batches.lengths,
        batches.y,
        jnp.asarray(lams)[:, None],
        tol,
        max_iter,
        learning_rate,
        activation=activation,
        optimizer=optimizer,
    )
    params = jax.tree_util.tree_map(lambda leaf: leaf[:, 0], params)
    values, grad_norms, counts = (np.asarray(a)[:, 0] for a in (values, grad_norms, counts))
    selected = _lowest(values[:, :starts]) if init == "random" else np.full(seeds, starts)

    per_seed = []
    for s in range(seeds):
        fits = jax.tree_util.tree_map(lambda leaf: leaf[s], params)
        teacher = (
            None if teachers is None else jax.tree_util.tree_map(lambda leaf: leaf[s], teachers)
        )
        score = (
            held_out_scorer(config, test_set)
            if test_set is not None
            else fresh_sample_scorer(keys[s, 3], config, teacher, N_test)
        )
        errors, stderrs, zero, zero_stderr = _start_test_errors(score, fits, activation)
        chosen = int(selected[s])
        fitted = jax.tree_util.tree_map(lambda leaf: leaf[chosen], fits)
        fitted_overlaps = None if teacher is None else overlaps(fitted, teacher)
        spread = float(np.ptp(errors[:starts]))
        tolerance = max(2.0 * float(stderrs[chosen]), AGREEMENT_FLOOR)
        per_seed.append(
            {
                "seed": s,
                "lam": float(lams[s]),
                "test_error": float(errors[chosen]),
                "stderr": float(stderrs[chosen]),
                "train_loss": float(values[s, chosen]),
                "grad_norm": float(grad_norms[s, chosen]),
                "iterations": int(counts[s, chosen]),
                "converged": bool(grad_norms[s, chosen] <= tol),
                "overlaps": fitted_overlaps,
                "predicted_population_error": (
                    predicted_population_error(activation, config, fitted_overlaps)
                    if predict_population and teacher is not None
                    else None
                ),
                "selected_start": "informed" if chosen == starts else chosen,
                "starts": {
                    "test_error": [float(x) for x in errors[:starts]],
                    "train_loss": [float(x) for x in values[s, :starts]],
                    "converged": [bool(g <= tol) for g in grad_norms[s, :starts]],
                },
                "start_spread": spread,
                "agreement_tolerance": tolerance,
                "restarts_agree": None
                if starts == 1
                else bool(np.isfinite(spread) and spread <= tolerance),
                "informed": None
                if teacher is None
                else {
                    "test_error": float(errors[starts]),
                    "stderr": float(stderrs[starts]),
                    "train_loss": float(values[s, starts]),
                    "converged": bool(grad_norms[s, starts] <= tol),
                },
                "zero_error": zero,
                "zero_stderr": zero_stderr,
                "validation": validation[s],
            }
        )
    mean, stderr = seed_mean(
        np.array([r["test_error"] for r in per_seed]), np.array([r["stderr"] for r in per_seed])
    )
    agree = [r["restarts_agree"] for r in per_seed]
    return ERMSummary(
        mean,
        stderr,
        per_seed,
        restarts_agree=None if starts == 1 else all(agree),
        lam=tuple(float(x) for x in lams),
        zero_error=float(np.mean([r["zero_error"] for r in per_seed])),
        informed_test_error=(
            None
            if teachers is None
            else float(np.mean([r["informed"]["test_error"] for r in per_seed]))
        ),
        notes=tuple(_notes(per_seed, lam, lam_grid, tol)),
        params=jax.tree_util.tree_map(
            lambda leaf: leaf[jnp.arange(seeds), jnp.asarray(selected)], params
        ),
    )


def _check_given_data(
    data: tuple[Teacher | None, SLRBatch] | None, test_set: SLRBatch | None, init: str
) -> None:
    """Refuse given data that cannot be scored: no teacher and no test set, or informed without a
    teacher.
    """
    if test_set is not None and data is None:
        raise ConfigError("test_set goes with given data (data=(teacher, training set))")
    if data is None or data[0] is not None:
        return
    if test_set is None:
        raise ConfigError(
            "data without a teacher needs a test_set of held-out sequences to measure the error on"
        )
    if init != "random":
        raise ConfigError(
            "init must be random for data without a teacher (the informed start is the teacher)"
        )


def _start_test_errors(score: Scorer, fits, activation):
    """Test errors of every start (leading axis of ``fits``) and of the zero predictor, on the same
    sequences.
    """
    starts = jax.tree_util.tree_leaves(fits)[0].shape[0]

    def every_start(X, lengths):
        predictions = jax.vmap(lambda p: predict(p, X, lengths, activation))(fits)  # (starts, n)
        return {
            **{str(i): predictions[i] for i in range(starts)},
            "zero": zero_predictor(X, lengths),
        }

    errors = score(every_start)
    per_start = [errors[str(i)] for i in range(starts)]
    return (
        np.array([e.value for e in per_start]),
        np.array([e.stderr for e in per_start]),
        errors["zero"].value,
        errors["zero"].stderr,
    )


def _notes(
    per_seed: list[dict[str, Any]], lam: float | str, lam_grid: tuple[float, ...], tol: float
) -> list[str]:
    """The sentences that must accompany an ERM number."""
    notes = []
    disagree = [r for r in per_seed if r["restarts_agree"] is False]
    if disagree:
        worst = max(disagree, key=lambda r: r["start_spread"])
        notes.append(
            f"random starts disagree at {len(disagree)} of {len(per_seed)} seeds (test errors "
            f"spread up to "
            f"{worst['start_spread']:.3g}, tolerance {worst['agreement_tolerance']:.2g}): the "
            f"landscape is "
            f"non-convex here; the lowest-training-loss start is reported"
        )
    unconverged = [r["seed"] for r in per_seed if not r["converged"]]
    if unconverged:
        notes.append(f"the reported fit did not reach |grad| <= {tol:g} at seeds {unconverged}")
    if lam == LAM_AUTO and len(lam_grid) > 1:
        edges = sorted({r["lam"] for r in per_seed if r["lam"] in (min(lam_grid), max(lam_grid))})
        if edges:
            notes.append(
                f"lam chosen at the edge of the grid ({', '.join(f'{x:g}' for x in edges)}): "
                f"the best ridge may lie beyond it"
            )
    return notes


def predicted_population_error(
    activation: str, config: SLRConfig, fitted_overlaps: dict[str, float]
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
    if not all(np.isfinite(value) for value in o.values()):
        return float("nan")  # a diverged fit: its test error is reported as it is
    rho_k, rho_v = o["rho_k"], o["rho_v"]
    nu = config.law.nu_with_c(config.c_nu * np.sqrt(rho_k))
    error = population_error(
        activation,
        config.replace(nu=float(nu)),
        o["m_k"] / np.sqrt(rho_k),
        o["q_k"],
        o["m_v"] / rho_v,
        o["q_v"] / rho_v,
        c=o["c"],
    )
    return float(rho_v * error)

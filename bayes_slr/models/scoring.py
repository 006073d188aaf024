"""One way to score any predictor against the generative model: the excess test error, and overlaps.

Every estimator of the toolkit is a *predictor*: a callable ``predict(X, lengths) -> (n,)``
(Bayes with known directions, the posterior predictor, AMP, trained attention, zero).
:func:`excess_test_error` scores all of them the same way, on fresh sequences from the
teacher, with the location integrated out exactly (docs/model.md section 2's error
convention: ``E[(y - f(X))^2] - Delta``); :func:`held_out_error` is the same estimator on
given held-out sequences when there is no teacher (bring-your-own data). A
:data:`Scorer` is either, bound to its test set. :func:`direction_overlaps` gives the order
parameters of any direction estimate.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple, Protocol

import jax
import jax.numpy as jnp
import numpy as np

from bayes_slr.errors import ConfigError, check_int
from bayes_slr.models.head_states import joint_state_log_weights
from bayes_slr.models.simulate import SLRBatch, Teacher, iterate_batches, mean_from_sums
from bayes_slr.models.spec import SLRConfig
from bayes_slr.numerics.paired import difference_name


class Predictor(Protocol):
    """An estimator of ``y`` from a padded batch of sequences."""

    def __call__(self, X: jax.Array, lengths: jax.Array) -> jax.Array:
        """``(n,)`` predictions for tokens ``X`` of shape ``(n, Lbar, D)`` and their lengths
        ``(n,)``.
        """
        ...


class ExcessError(NamedTuple):
    """Monte Carlo estimate of an excess test error, or of a paired difference of two
    (:func:`_score`).

    ``stderr`` covers the test-set noise and, for a predictor given as independent
    replicates, the draw-to-draw noise too (``stderr_test``, ``stderr_draws`` separately).
    """

    value: float
    stderr: float
    n_test: int
    stderr_test: float | None = None
    stderr_draws: float | None = None

    def as_dict(self) -> dict[str, float]:
        out = {"value": self.value, "stderr": self.stderr}
        if self.stderr_draws is not None:
            out.update(stderr_test=self.stderr_test, stderr_draws=self.stderr_draws)
        return out


def zero_predictor(X: jax.Array, lengths: jax.Array) -> jax.Array:
    """``f = 0``: the Bayes predictor as alpha -> 0 (the prior mean of ``v`` is zero); its error is
    about 1.
    """
    return jnp.zeros(X.shape[0], X.dtype)


@functools.partial(jax.jit, static_argnames=("config",))
def excess_error_given_teacher(
    config: SLRConfig, teacher: Teacher, batch: SLRBatch, predictions: jax.Array
) -> jax.Array:
    """Per-sequence ``E[(z*_{eps*} - f(X))^2 | X]``, ``(n,)``.

    The location is integrated out exactly with the teacher's location posterior
    ``p*_l = P(eps* = l | X, k*)``: ``sum_l p*_l (z*_l - f(X))^2``. Its mean over fresh
    ``X`` is the excess test error ``E[(y - f(X))^2] - Delta`` (noise is independent),
    with less Monte Carlo variance than squaring ``y - f(X)``.
    """
    return jnp.sum(
        teacher_location_posterior(config, teacher, batch)
        * (batch.z_star - predictions[:, None]) ** 2,
        axis=-1,
    )


def teacher_location_posterior(config: SLRConfig, teacher: Teacher, batch: SLRBatch) -> jax.Array:
    """``p*_l = P(eps* = l | X, k*)`` of every sequence of ``batch``, ``(n, Lbar)``, from the token
    law.
    """
    chi_star = batch.X @ jnp.asarray(teacher.k_star) / math.sqrt(batch.X.shape[-1])
    return config.law.location_posterior(chi_star, batch.mask, config.nu)


def _teacher_states(
    config: SLRConfig, teacher: Teacher, batch: SLRBatch
) -> tuple[jax.Array, jax.Array]:
    """The weights ``p`` and the signal ``z`` of every state of each sequence given ``X`` and the
    teacher, ``(n, S)`` each, ``p`` summing to one: the location and ``z*_l`` for one-head SLR
    (:func:`teacher_location_posterior`), the heads' joint states of a multi-head task
    (:func:`~bayes_slr.models.head_states.joint_state_log_weights`, docs/multihead.md section 2)."""
    if not config.multihead:
        return teacher_location_posterior(config, teacher, batch), batch.z_star
    log_w, signal = joint_state_log_weights(
        batch.X, batch.lengths, jnp.asarray(teacher.k_star), jnp.asarray(teacher.v_star), config
    )
    weights = jnp.exp(log_w - jax.nn.logsumexp(log_w, axis=-1, keepdims=True))
    return weights, jnp.where(weights > 0, signal, 0.0)


_jitted_teacher_states = jax.jit(_teacher_states, static_argnames=("config",))
""":func:`_teacher_states` as one program a chunk of test sequences."""


def _replicate_statistic(p_star: jax.Array, z_star: jax.Array, f: jax.Array) -> jax.Array:
    """Per sequence: the cross-replicate error ``U`` and its leave-one-group-out versions, ``(n, 1 +
    G)``.

    ``U = mean over g != h of sum_l p*_l (z*_l - f_g)(z*_l - f_h)``: independent replicates
    make ``E[(z - f_g)(z - f_h)] = (z - E f_g)^2`` exactly, so ``U`` carries no
    ``Var(f_g)`` bias (squaring one average does).
    """
    G = f.shape[-1]
    Q = jnp.sum(p_star * z_star**2, axis=-1)
    zbar = jnp.sum(p_star * z_star, axis=-1)

    def cross(mask: jax.Array) -> jax.Array:
        count = jnp.sum(mask)
        s1 = jnp.sum(f * mask, axis=-1)
        s2 = jnp.sum(f**2 * mask, axis=-1)
        return Q - 2 * zbar * s1 / count + (s1**2 - s2) / (count * (count - 1))

    full = cross(jnp.ones(G))
    if G < 3:
        return full[:, None]
    leave_one_out = jax.vmap(lambda j: cross(jnp.arange(G) != j), out_axes=1)(jnp.arange(G))
    return jnp.concatenate([full[:, None], leave_one_out], axis=1)


PredictFn = Callable[[jax.Array, jax.Array], "jax.Array | dict[str, jax.Array]"]
"""``predict(X, lengths)``: ``(n,)`` predictions, ``(n, G)`` replicates, or a dict of those."""
Pairs = Sequence[tuple[str, str]]
"""Pairs ``(a, b)`` of keys of a dict of predictions whose paired difference ``a - b`` is wanted."""
Scorer = Callable[..., "ExcessError | dict[str, ExcessError]"]
"""A test set with its estimator: ``score(predict, pairs=())`` is :func:`excess_test_error` or
:func:`held_out_error` (``pairs`` adds paired differences, :func:`difference_name`)."""


def _paired_columns(columns: dict[str, np.ndarray], pairs: Pairs) -> dict[str, np.ndarray]:
    """Per-sequence differences of the scored statistics, ``a - b`` for each pair,
    leave-one-group-out columns paired.

    A width-1 column (``(n,)`` predictions) broadcasts against the ``1 + G`` columns of replicates;
    two replicate predictors must have the same ``G``, group ``g`` of one paired with group ``g``
    of the other (for the posterior predictors, the same draws). The statistics are float64, so
    each difference is exact and its mean is the difference of the two means up to summation
    rounding.
    """
    out = {}
    for a, b in pairs:
        for name in (a, b):
            if name not in columns:
                raise ConfigError(
                    f"paired difference {a!r} - {b!r}: no prediction named {name!r} "
                    f"(predictions: {', '.join(map(repr, columns))})"
                )
        left, right = columns[a], columns[b]
        if 1 < left.shape[1] != right.shape[1] > 1:
            raise ConfigError(
                f"paired difference {a!r} - {b!r}: {left.shape[1] - 1} and {right.shape[1] - 1} "
                "replicate groups; replicates are paired group by group, so the counts must match"
            )
        out[difference_name(a, b)] = left - right
    return out


@jax.jit
def _statistics(p: jax.Array, z: jax.Array, parts: dict[str, jax.Array]) -> dict[str, jax.Array]:
    """Per sequence, the statistic of each prediction of ``parts`` (:func:`_score`): ``sum_l p_l
    (z_l - f)^2`` of ``(n,)`` predictions, :func:`_replicate_statistic` of ``(n, G)`` replicates;
    one program a chunk."""
    return {
        name: jnp.sum(p * (z - f[:, None]) ** 2, axis=-1)[:, None]
        if jnp.ndim(f) == 1
        else _replicate_statistic(p, z, f)
        for name, f in parts.items()
    }


def _score(
    predict: PredictFn,
    chunks: Iterable[tuple[jax.Array, jax.Array, jax.Array, jax.Array]],
    offset: float = 0.0,
    pairs: Pairs = (),
) -> ExcessError | dict[str, ExcessError]:
    """Mean over sequences of ``sum_l p_l (z_l - f)^2 - offset`` (or its replicate form), per
    prediction.

    ``chunks`` yields ``(X, lengths, p, z)``: tokens, lengths, per-token weights ``p`` (summing
    to one) and per-token targets ``z``. ``(n,)`` predictions score
    ``sum_l p_l (z_l - f)^2``; ``(n, G)`` replicates the cross-replicate statistic of
    :func:`_replicate_statistic`, whose ``stderr`` adds a leave-one-group-out jackknife (``G >=
    3``).

    ``pairs`` (keys of a dict of predictions) add, under :func:`difference_name`, the paired
    difference: the mean over the same sequences of the per-sequence difference of the two
    statistics (``offset`` cancels), whose ``stderr_test`` is the standard error over sequences
    of that difference; with replicates the jackknife runs on the differenced leave-one-group-out
    statistics (:func:`_paired_columns`), so ``stderr`` covers the draw noise of the difference.
    """
    names: list[str] = []
    widths: dict[str, int] = {}
    total, total_sq, count = 0.0, 0.0, 0
    for X, lengths, p, z in chunks:
        out = predict(X, lengths)
        parts = out if isinstance(out, dict) else {"": out}
        columns = {
            name: np.asarray(column, dtype=np.float64)
            for name, column in _statistics(p, z, parts).items()
        }
        columns.update(_paired_columns(columns, pairs))
        if not names:
            names.extend(columns)
            widths.update({name: column.shape[1] for name, column in columns.items()})
        values = np.concatenate(list(columns.values()), axis=1)
        total, total_sq, count = (
            total + values.sum(axis=0),
            total_sq + (values**2).sum(axis=0),
            count + values.shape[0],
        )
    result = mean_from_sums(total, total_sq, count)
    differences = {difference_name(a, b) for a, b in pairs}
    errors, start = {}, 0
    for name in names:
        width = widths[name]
        mean, stderr = result.mean[start : start + width], result.stderr[start : start + width]
        mean = mean if name in differences else mean - offset
        start += width
        if width == 1:
            errors[name] = ExcessError(float(mean[0]), float(stderr[0]), result.count)
            continue
        G = width - 1
        jackknife = math.sqrt((G - 1) / G * float(np.sum((mean[1:] - mean[1:].mean()) ** 2)))
        errors[name] = ExcessError(
            float(mean[0]),
            math.hypot(float(stderr[0]), jackknife),
            result.count,
            float(stderr[0]),
            jackknife,
        )
    return errors if len(names) > 1 or names != [""] else errors[""]


def excess_test_error(
    key: jax.Array,
    config: SLRConfig,
    teacher: Teacher,
    predict: PredictFn,
    *,
    N_test: int = 100_000,
    chunk_size: int = 10_000,
    pairs: Pairs = (),
    coordinates_first: bool = False,
) -> ExcessError | dict[str, ExcessError]:
    """Excess test error ``E[(y - f(X))^2] - Delta`` of ``f = predict(X, lengths)`` with its
    standard error.

    ``N_test`` (``>= 2``) fresh sequences from ``teacher``, generated ``chunk_size`` at a
    time from ``key`` (the same key gives the same test set); the location is integrated
    out exactly with the teacher's location posterior ``p*`` (:func:`excess_error_given_teacher`;
    on a multi-head task the heads' joint states, :func:`_teacher_states`).

    ``predict`` returns ``(n,)`` predictions, or ``(n, G)`` with ``G >= 2`` independent
    replicates of a Monte Carlo predictor (e.g. posterior means over disjoint groups of
    draws), or a dict of such arrays (one error per key, one pass over the test set).
    With replicates the estimate is ``mean over g != h of sum_l p*_l (z*_l - f_g)(z*_l - f_h)``:
    unbiased for the error of the replicates' common mean (no ``Var(f_g)`` term), and
    ``stderr`` combines the test-set standard error with a leave-one-group-out jackknife
    over the groups (``G >= 3``) for the draw-to-draw noise. ``pairs`` adds paired differences
    between keys of the dict on the same sequences (:func:`_score`). ``coordinates_first``: the
    tokens drawn coordinate by coordinate
    (:func:`~bayes_slr.models.simulate.simulate`).
    """
    chunks = (
        (batch.X, batch.lengths, *_jitted_teacher_states(config, teacher, batch))
        for batch in iterate_batches(key, config, teacher, N_test, chunk_size, coordinates_first)
    )
    return _score(predict, chunks, pairs=pairs)


def held_out_error(
    config: SLRConfig,
    held_out: SLRBatch,
    predict: PredictFn,
    *,
    chunk_size: int = 10_000,
    pairs: Pairs = (),
) -> ExcessError | dict[str, ExcessError]:
    """Excess error ``mean (y - f(X))^2 - Delta`` of ``predict`` on given held-out sequences (no
    teacher needed).

    The estimator of :func:`excess_test_error` with the observed output in place of the
    teacher's integrated location (one "token" of weight 1 and target ``y``): the same
    replicate form and standard errors, over the ``n >= 2`` held-out sequences; ``Delta`` is
    ``config.Delta`` (the noise the excess is measured over, docs/model.md section 2). ``pairs``:
    paired differences on the held-out sequences, as in :func:`excess_test_error`.
    """
    n = check_int("held-out sequences", held_out.y.shape[0], 2)
    X, lengths, y = (np.asarray(a) for a in (held_out.X, held_out.lengths, held_out.y))
    chunks = (  # sliced on the host: no program per chunk shape
        (
            jnp.asarray(X[i : i + chunk_size]),
            jnp.asarray(lengths[i : i + chunk_size]),
            np.ones((min(chunk_size, n - i), 1)),
            y[i : i + chunk_size, None],
        )
        for i in range(0, n, chunk_size)
    )
    return _score(predict, chunks, offset=config.Delta, pairs=pairs)


def fresh_sample_scorer(
    key: jax.Array,
    config: SLRConfig,
    teacher: Teacher,
    N_test: int,
    chunk_size: int = 10_000,
    coordinates_first: bool = False,
) -> Scorer:
    """``score(predict)``: :func:`excess_test_error` on ``N_test`` fresh sequences of ``teacher``
    from ``key`` (``coordinates_first``: drawn coordinate by coordinate,
    :func:`~bayes_slr.models.simulate.simulate`).
    """
    return functools.partial(
        excess_test_error,
        key,
        config,
        teacher,
        N_test=N_test,
        chunk_size=chunk_size,
        coordinates_first=coordinates_first,
    )


def held_out_scorer(config: SLRConfig, held_out: SLRBatch) -> Scorer:
    """``score(predict)``: :func:`held_out_error` on ``held_out``."""
    return functools.partial(held_out_error, config, held_out)


def direction_overlaps(
    k: jax.Array | np.ndarray, v: jax.Array | np.ndarray, teacher: Teacher
) -> dict[str, np.ndarray]:
    """Order parameters of direction estimates ``k, v`` of shape ``(..., D)`` against the teacher,
    divided by ``D``.

    Returns ``m_k = k.k*/D``, ``q_k = k.k/D``, ``m_v = v.v*/D``, ``q_v = v.v/D``, the cross
    overlaps ``k_vstar = k.v*/D``, ``v_kstar = v.k*/D``, ``k_v = k.v/D`` (zero on the manifold
    of docs/model.md section 4) and the teacher's ``rho_k = |k*|^2/D``, ``rho_v = |v*|^2/D``,
    ``kstar_vstar = k*.v*/D``.
    """
    k, v = np.asarray(k, dtype=np.float64), np.asarray(v, dtype=np.float64)
    k_star, v_star = (
        np.asarray(teacher.k_star, dtype=np.float64),
        np.asarray(teacher.v_star, dtype=np.float64),
    )
    D = k.shape[-1]
    return {
        "m_k": k @ k_star / D,
        "q_k": np.sum(k * k, axis=-1) / D,
        "m_v": v @ v_star / D,
        "q_v": np.sum(v * v, axis=-1) / D,
        "k_vstar": k @ v_star / D,
        "v_kstar": v @ k_star / D,
        "k_v": np.sum(k * v, axis=-1) / D,
        "rho_k": np.asarray(k_star @ k_star / D),
        "rho_v": np.asarray(v_star @ v_star / D),
        "kstar_vstar": np.asarray(k_star @ v_star / D),
    }

"""The exact test error of ``(k, v)`` at any dimension, from sequences of dimension 4.

An attention estimator sees a token only through ``x.k`` and ``x.v``, the teacher only through
``x.k*`` and ``x.v*``, and the token law only adds a spike along ``k*`` (planted variants) or
tilts the location by ``x.k*`` (tilted variants). For i.i.d. ``N(0, I_D)`` tokens the four
projections ``x.a / sqrt(D)``, ``a in (k*, v*, k, v)``, are jointly Gaussian with covariance
the Gram matrix of the four vectors divided by ``D``, whatever ``D``. So coordinates of the four
vectors in a basis of their span, scaled to ``|a'|^2 / 4 = |a|^2 / D``, give a problem in
dimension 4 whose sequences have exactly the law of the four projections: its test error is the
test error of the original estimator, cross overlaps and teacher norms included, at a cost that
does not grow with ``D`` (a test set of ``10^5`` sequences costs what it costs at ``D = 4``).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from bayes_slr.attention.estimators import AttentionParams, attention_predictor
from bayes_slr.models.scoring import ExcessError, excess_test_error
from bayes_slr.models.simulate import Teacher
from bayes_slr.models.spec import SLRConfig

SPAN = 4
"""Dimension of the reduced problem: the span of ``k*, v*, k, v``."""


def span_basis(
    params: AttentionParams, teacher: Teacher
) -> tuple[jax.Array, AttentionParams, Teacher]:
    """An orthonormal basis of a 4-dimensional space holding ``k*, v*, k, v``, and the estimator
    and teacher in dimension 4 with the same Gram matrix (over ``D`` vs over 4).

    The basis ``Q`` (``D x 4``) and the coordinates ``R`` come from the QR factorisation of the
    ``D x 4`` matrix ``[k*, v*, k, v]`` (exact for rank-deficient spans too: ``A = QR`` holds with
    ``Q`` orthonormal); the reduced vectors are ``sqrt(4 / D) R``, so a token ``u = Q^T x`` of
    the reduced problem has the scores ``u . a' / 2 = x . a / sqrt(D)`` of ``x``.
    """
    basis, small_params, small_teacher = _reduced(params, teacher)
    return basis, jax.tree_util.tree_map(lambda leaf: leaf[0], small_params), small_teacher


def span_reduction(
    config: SLRConfig, teacher: Teacher, estimators: AttentionParams
) -> tuple[SLRConfig, Teacher, AttentionParams]:
    """The task of dimension ``m = 2 + 2 S`` whose sequences have the law of the projections of
    ``config``'s tokens on ``k*, v*`` and the ``S`` estimators' ``k, v`` (module docstring):
    every estimator's and the teacher's test error, each on the same sequences, at the cost of
    dimension ``m`` instead of ``D``.

    Parameters
    ----------
    config : the task.
    teacher : ``(k*, v*)`` of shape ``(D,)``.
    estimators : leaves ``k``, ``v`` of shape ``(S, D)`` and ``c`` of shape ``(S,)``.

    Returns
    -------
    ``(config, teacher, estimators)`` of dimension ``m``; those given when ``m >= D`` (nothing
    to gain).
    """
    if 2 + 2 * jnp.shape(estimators.k)[0] >= config.D:
        return config, teacher, estimators
    host = jax.tree_util.tree_map(np.asarray, (estimators, teacher))
    _, small_estimators, small_teacher = _reduced_in(np, *host)
    return config.replace(D=small_teacher.k_star.shape[0]), small_teacher, small_estimators


def _reduced_in(xp: Any, estimators: AttentionParams, teacher: Teacher):
    """``(Q, estimators', teacher')``: ``Q`` an orthonormal basis (``D x m``) of a space holding
    the ``m = 2 + 2 S`` vectors ``k*, v*`` and each estimator's ``k, v`` (leaves ``(S, D)``, or
    ``(D,)`` for one), from the QR factorisation of ``[k*, v*, k_1, v_1, ...]``, and the vectors'
    coordinates scaled by ``sqrt(m / D)``: a token ``u = Q^T x`` then has the scores
    ``u . a' / sqrt(m) = x . a / sqrt(D)`` of ``x`` (the teacher's and every estimator's).
    ``xp``: the array module, ``numpy`` (on the host: a ``D x m`` factorisation is microseconds,
    and a fresh process loads no program for it, whose lowering took about 0.1 s) or
    ``jax.numpy`` (:data:`_reduced`, for arrays that may be traced)."""
    k = xp.reshape(estimators.k, (-1, teacher.k_star.shape[0]))
    v = xp.reshape(estimators.v, k.shape)
    count = k.shape[0]
    columns = xp.concatenate(
        [
            xp.stack([teacher.k_star, teacher.v_star]),
            xp.stack([k, v], axis=1).reshape(-1, k.shape[1]),
        ]
    ).T
    basis, coordinates = xp.linalg.qr(columns)
    coordinates = coordinates * math.sqrt(columns.shape[1] / columns.shape[0])
    pairs = coordinates[:, 2:].T.reshape(count, 2, -1)
    return (
        basis,
        AttentionParams(pairs[:, 0], pairs[:, 1], xp.reshape(xp.asarray(estimators.c), (count,))),
        Teacher(coordinates[:, 0], coordinates[:, 1]),
    )


_reduced = jax.jit(functools.partial(_reduced_in, jnp))
""":func:`_reduced_in` with ``jax.numpy``, compiled: one program where each array operation was
one."""


def reduced_problem(params: AttentionParams, teacher: Teacher) -> tuple[AttentionParams, Teacher]:
    """The estimator and teacher in dimension 4 with the same Gram matrix (over ``D`` vs over 4):
    :func:`span_basis` without the basis."""
    _, small_params, small_teacher = span_basis(params, teacher)
    return small_params, small_teacher


def span_test_error(
    key: jax.Array,
    config: SLRConfig,
    teacher: Teacher,
    params: AttentionParams,
    activation: str,
    N_test: int,
) -> ExcessError:
    """Excess test error of ``params`` on ``N_test`` fresh sequences of the reduced problem.

    The same estimator (:func:`~bayes_slr.models.scoring.excess_test_error`, location integrated
    with the teacher's posterior) on sequences of dimension 4 (:func:`reduced_problem`): an
    unbiased estimate of the test error at ``config.D``, with its standard error; the same
    ``key`` gives the same test sequences for every ``params`` (smooth curves along a run).
    """
    small_params, small_teacher = reduced_problem(params, teacher)
    return excess_test_error(
        key,
        config.replace(D=SPAN),
        small_teacher,
        attention_predictor(small_params, activation),
        N_test=N_test,
    )

"""One way to score any predictor against the generative model: the excess test error, and overlaps.

Every estimator of the toolkit is a *predictor*: a callable ``predict(X, lengths) -> (n,)``
(Bayes with known directions, the posterior predictor, AMP, trained attention, zero).
:func:`excess_test_error` scores all of them the same way, on fresh sequences from the
teacher, with the location integrated out exactly (MODEL.md section 2's error
convention: ``E[(y - f(X))^2] - Delta``). :func:`direction_overlaps` gives the order
parameters of any direction estimate.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple, Protocol

import jax
import jax.numpy as jnp
import numpy as np

from bayes_slr.errors import check_int
from bayes_slr.models.simulate import SLRBatch, Teacher, streamed_mean
from bayes_slr.models.spec import SLRConfig


class Predictor(Protocol):
    """An estimator of ``y`` from a padded batch of sequences."""

    def __call__(self, X: jax.Array, lengths: jax.Array) -> jax.Array:
        """``(n,)`` predictions for tokens ``X`` of shape ``(n, Lbar, D)`` and their lengths ``(n,)``."""
        ...


class ExcessError(NamedTuple):
    """Monte Carlo estimate of an excess test error."""

    value: float
    stderr: float
    n_test: int


def zero_predictor(X: jax.Array, lengths: jax.Array) -> jax.Array:
    """``f = 0``: the Bayes predictor as alpha -> 0 (the prior mean of ``v`` is zero); its error is about 1."""
    return jnp.zeros(X.shape[0], X.dtype)


@functools.partial(jax.jit, static_argnames=("config",))
def excess_error_given_teacher(config: SLRConfig, teacher: Teacher, batch: SLRBatch, predictions: jax.Array) -> jax.Array:
    """Per-sequence ``E[(z*_{eps*} - f(X))^2 | X]``, ``(n,)``.

    The location is integrated out exactly with the teacher's location posterior
    ``p*_l = P(eps* = l | X, k*)``: ``sum_l p*_l (z*_l - f(X))^2``. Its mean over fresh
    ``X`` is the excess test error ``E[(y - f(X))^2] - Delta`` (the noise is independent),
    with less Monte Carlo variance than squaring ``y - f(X)``.
    """
    chi_star = batch.X @ jnp.asarray(teacher.k_star) / math.sqrt(config.D)
    p_star = config.law.location_posterior(chi_star, batch.mask, config.nu)
    return jnp.sum(p_star * (batch.z_star - predictions[:, None]) ** 2, axis=-1)


def excess_test_error(
    key: jax.Array,
    config: SLRConfig,
    teacher: Teacher,
    predict: Predictor,
    *,
    N_test: int = 100_000,
    chunk_size: int = 10_000,
) -> ExcessError:
    """Excess test error ``E[(y - f(X))^2] - Delta`` of ``f = predict(X, lengths)`` with its standard error.

    Parameters
    ----------
    key : PRNG key of the test set (the same key gives the same test set, so several
        predictors scored with one key are compared on common sequences).
    config : the task.
    teacher : the teacher that generates the test sequences.
    predict : any :class:`Predictor`.
    N_test : number of fresh sequences, ``>= 2``, generated ``chunk_size`` at a time.
    chunk_size : sequences per chunk (memory stays flat).

    Returns
    -------
    ExcessError
        The mean over test sequences of :func:`excess_error_given_teacher` and its standard error.
    """
    N_test = check_int("N_test", N_test, 2)

    def statistic(batch: SLRBatch) -> jax.Array:
        return excess_error_given_teacher(config, teacher, batch, predict(batch.X, batch.lengths))

    result = streamed_mean(statistic, key, config, teacher, N_test, chunk_size)
    return ExcessError(float(result.mean), float(result.stderr), result.count)


def direction_overlaps(k: jax.Array | np.ndarray, v: jax.Array | np.ndarray, teacher: Teacher) -> dict[str, np.ndarray]:
    """Order parameters of direction estimates ``k, v`` of shape ``(..., D)`` against the teacher, divided by ``D``.

    Returns ``m_k = k.k*/D``, ``q_k = k.k/D``, ``m_v = v.v*/D``, ``q_v = v.v/D``, the cross
    overlaps ``k_vstar = k.v*/D``, ``v_kstar = v.k*/D``, ``k_v = k.v/D`` (zero on the manifold
    of MODEL.md section 4) and the teacher's ``rho_k = |k*|^2/D``, ``rho_v = |v*|^2/D``,
    ``kstar_vstar = k*.v*/D``.
    """
    k, v = np.asarray(k, dtype=np.float64), np.asarray(v, dtype=np.float64)
    k_star, v_star = np.asarray(teacher.k_star, dtype=np.float64), np.asarray(teacher.v_star, dtype=np.float64)
    D = k.shape[-1]
    return {
        "m_k": k @ k_star / D, "q_k": np.sum(k * k, axis=-1) / D, "m_v": v @ v_star / D, "q_v": np.sum(v * v, axis=-1) / D,
        "k_vstar": k @ v_star / D, "v_kstar": v @ k_star / D, "k_v": np.sum(k * v, axis=-1) / D,
        "rho_k": np.asarray(k_star @ k_star / D), "rho_v": np.asarray(v_star @ v_star / D),
        "kstar_vstar": np.asarray(k_star @ v_star / D),
    }

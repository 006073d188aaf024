"""The Bayes-optimal predictor at finite alpha and location posteriors from posterior draws.

For one draw ``(k, v)`` the predictor is ``E[y | X, k, v] = sum_l P(eps = l | X, k) z_l``
with ``P(eps = l | X, k) = softmax(c_nu chi)_l`` (MODEL.md section 2); the Bayes-optimal
predictor given the training set is its posterior mean over the draws.
"""

from __future__ import annotations

import functools
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayes_slr.errors import ConfigError, check_int, check_real
from bayes_slr.inference.location import location_posterior
from bayes_slr.models.numpyro_models import location_joint_log_weights
from bayes_slr.models.simulate import SLRBatch, Teacher, streamed_mean, token_mask
from bayes_slr.models.spec import SLRConfig

DRAWS_PER_BLOCK = 64  # posterior draws evaluated together by the predictor


def _flat(draws: jax.Array | np.ndarray) -> jax.Array:
    """``(chains, draws, D)`` or ``(S, D)`` -> ``(S, D)``."""
    draws = jnp.asarray(draws)
    return draws.reshape(-1, draws.shape[-1])


def location_probabilities(
    config: SLRConfig, X: jax.Array, lengths: jax.Array, k: jax.Array,
    v: jax.Array | None = None, y: jax.Array | None = None,
) -> jax.Array:
    """``P(eps = l | X, k)`` (or ``P(eps = l | X, y, k, v)`` when ``v`` and ``y`` are given), ``(N, Lbar)``.

    Zero on padded tokens. For one direction ``k`` of shape ``(D,)``; without ``y`` this is
    :func:`~bayes_slr.inference.location.location_posterior` at ``k``.
    """
    if y is None:
        return location_posterior(X, lengths, config, k=k)
    logits = location_joint_log_weights(X, lengths, y, k, v, config)
    return jax.nn.softmax(logits, axis=-1, where=token_mask(lengths, config.Lbar))


@functools.partial(jax.jit, static_argnames=("config",))
def _predict(
    config: SLRConfig, k_blocks: jax.Array, v_blocks: jax.Array, weights: jax.Array, X: jax.Array, lengths: jax.Array
) -> jax.Array:
    """Weighted sum over draw blocks ``(blocks, B, D)`` of the per-draw predictions, by ``lax.scan``."""

    def one(k_i: jax.Array, v_i: jax.Array) -> jax.Array:
        z = X @ v_i / jnp.sqrt(config.D)
        return jnp.sum(location_probabilities(config, X, lengths, k_i) * z, axis=-1)

    def step(total: jax.Array, block: tuple[jax.Array, jax.Array, jax.Array]) -> tuple[jax.Array, None]:
        k_block, v_block, w_block = block
        return total + w_block @ jax.vmap(one)(k_block, v_block), None

    total, _ = jax.lax.scan(step, jnp.zeros(X.shape[0], X.dtype), (k_blocks, v_blocks, weights))
    return total


def posterior_mean_predictor(
    config: SLRConfig, k_draws: jax.Array, v_draws: jax.Array, X: jax.Array, lengths: jax.Array
) -> jax.Array:
    """Posterior mean of ``sum_l softmax(c_nu chi)_l z_l`` at each sequence of ``X``.

    Parameters
    ----------
    config : SLRConfig
    k_draws, v_draws : (chains, draws, D) or (S, D) posterior draws.
    X : (n, Lbar, D) tokens; lengths : (n,) lengths.

    Returns
    -------
    (n,) predictions. The draws are scanned over in blocks of
    :data:`DRAWS_PER_BLOCK` (memory ``DRAWS_PER_BLOCK * n * Lbar`` numbers).
    """
    k, v = _flat(k_draws), _flat(v_draws)
    S, D = k.shape
    padded = -(-S // DRAWS_PER_BLOCK) * DRAWS_PER_BLOCK
    weights = jnp.where(jnp.arange(padded) < S, 1.0 / S, 0.0).reshape(-1, DRAWS_PER_BLOCK)

    def blocks(draws: jax.Array) -> jax.Array:
        return jnp.zeros((padded, D), draws.dtype).at[:S].set(draws).reshape(-1, DRAWS_PER_BLOCK, D)

    return _predict(config, blocks(k), blocks(v), weights, jnp.asarray(X), jnp.asarray(lengths))


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
    p_star = location_posterior(batch.X, batch.lengths, config, k=jnp.asarray(teacher.k_star))
    return jnp.sum(p_star * (batch.z_star - predictions[:, None]) ** 2, axis=-1)


def thin_draws(draws: jax.Array | np.ndarray, max_draws: int) -> jax.Array:
    """At most ``max_draws`` (``>= 1``) of the draws, evenly spaced, as ``(S, D)``."""
    max_draws = check_int("max_draws", max_draws, 1)
    flat = _flat(draws)
    step = -(-flat.shape[0] // max_draws)
    return flat[::step]


class ExcessError(NamedTuple):
    """Monte Carlo estimate of an excess test error."""

    value: float
    stderr: float
    n_test: int


def bayes_test_error(
    key: jax.Array,
    config: SLRConfig,
    teacher: Teacher,
    k_draws: jax.Array,
    v_draws: jax.Array,
    *,
    N_test: int = 100_000,
    chunk_size: int = 10_000,
    max_draws: int = 1_000,
) -> ExcessError:
    """Excess test error of the posterior-mean predictor on ``N_test`` fresh sequences.

    Parameters
    ----------
    key : PRNG key of the test set.
    config : SLRConfig
    teacher : Teacher
        The teacher that generated the training set (the test set comes from it too).
    k_draws, v_draws : posterior draws, ``(chains, draws, D)`` or ``(S, D)``.
    N_test : int
        Number of test sequences, ``>= 2``.
    chunk_size : int
        Test sequences generated at once.
    max_draws : int
        At most this many draws (evenly thinned) form the posterior mean; the
        Monte Carlo error of the mean adds about ``E[Var_post f(X)] / max_draws`` to
        the error (positive, negligible next to its standard error in practice).

    Returns
    -------
    ExcessError
        ``E[(y - f(X))^2] - Delta`` and its standard error (see
        :func:`excess_error_given_teacher`).
    """
    k_draws, v_draws = thin_draws(k_draws, max_draws), thin_draws(v_draws, max_draws)
    return excess_test_error(
        key, config, teacher, lambda X, lengths: posterior_mean_predictor(config, k_draws, v_draws, X, lengths),
        N_test=N_test, chunk_size=chunk_size,
    )


class LocationPosterior(NamedTuple):
    """Posterior of the location of one sequence, per token.

    Attributes
    ----------
    probs : (L,) posterior probability ``P(eps = l | X, data)`` (mean over draws).
    lower, upper : (L,) equal-tailed credible interval of ``P(eps = l | X, k)`` over the
        posterior of ``k`` (how much the direction uncertainty moves each probability).
    level : credible level of the interval.
    """

    probs: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    level: float


def sequence_location_posterior(
    config: SLRConfig,
    k_draws: jax.Array,
    tokens: jax.Array,
    *,
    v_draws: jax.Array | None = None,
    y: float | None = None,
    level: float = 0.9,
) -> LocationPosterior:
    """Location posterior of one new sequence ``tokens`` (shape ``(L, D)``, ``L <= Lbar``).

    Without ``y``: ``P(eps = l | X, k)`` averaged over the draws of ``k``. With ``y`` (and
    ``v_draws``): ``P(eps = l | X, y, k, v)``, the output observed too.
    """
    level = check_real("level", level, minimum=0.0, strict=True)
    if level >= 1:
        raise ConfigError(f"level must be a number in (0, 1), got {level!r}")
    tokens = jnp.asarray(tokens)
    if tokens.ndim != 2 or not 1 <= tokens.shape[0] <= config.Lbar or tokens.shape[1] != config.D:
        raise ConfigError(f"tokens must have shape (L, D) with 1 <= L <= {config.Lbar} and D = {config.D}, "
                          f"got {tuple(tokens.shape)}")
    L = tokens.shape[0]
    X = jnp.zeros((1, config.Lbar, config.D)).at[0, :L].set(tokens)
    lengths = jnp.array([L])
    k = _flat(k_draws)
    if y is None:
        per_draw = jax.vmap(lambda k_i: location_probabilities(config, X, lengths, k_i))(k)
    else:
        y_arr = jnp.array([y], dtype=X.dtype)
        per_draw = jax.vmap(lambda k_i, v_i: location_probabilities(config, X, lengths, k_i, v_i, y_arr))(
            k, _flat(v_draws)
        )
    per_draw = np.asarray(per_draw[:, 0, :L])
    tail = (1.0 - level) / 2
    return LocationPosterior(
        per_draw.mean(axis=0), np.quantile(per_draw, tail, axis=0), np.quantile(per_draw, 1 - tail, axis=0), level
    )


@functools.partial(jax.jit, static_argnames=("config",))
def training_location_posterior(
    config: SLRConfig, batch: SLRBatch, k_draws: jax.Array, v_draws: jax.Array
) -> jax.Array:
    """Per-chain location posteriors of the training sequences, ``(chains, N, Lbar)``.

    Rao-Blackwellised: the mean over a chain's draws of ``P(eps_mu = l | X_mu, y_mu, k, v)``.
    """

    def chain_mean(k_chain: jax.Array, v_chain: jax.Array) -> jax.Array:
        def one(total: jax.Array, kv: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, None]:
            k_i, v_i = kv
            return total + location_probabilities(config, batch.X, batch.lengths, k_i, v_i, batch.y), None

        total, _ = jax.lax.scan(one, jnp.zeros(batch.X.shape[:2]), (k_chain, v_chain))
        return total / k_chain.shape[0]

    return jax.vmap(chain_mean)(k_draws, v_draws)


def zero_predictor_error(
    key: jax.Array, config: SLRConfig, teacher: Teacher, *, N_test: int = 100_000, chunk_size: int = 10_000
) -> ExcessError:
    """Excess test error of ``f = 0``, the posterior-mean predictor as alpha -> 0.

    Under the prior ``v ~ N(0, I)`` is symmetric, so the prior mean of ``f`` is zero and
    the Bayes error at alpha -> 0 is ``E[z*_{eps*}^2]`` (about 1). Estimated on the test
    set that :func:`bayes_test_error` draws from the same ``key``.
    """
    return excess_test_error(
        key, config, teacher, lambda X, lengths: jnp.zeros(X.shape[0], X.dtype), N_test=N_test, chunk_size=chunk_size
    )


def excess_test_error(
    key: jax.Array,
    config: SLRConfig,
    teacher: Teacher,
    predict: Callable[[jax.Array, jax.Array], jax.Array],
    *,
    N_test: int = 100_000,
    chunk_size: int = 10_000,
) -> ExcessError:
    """Excess test error ``E[(y - f(X))^2] - Delta`` of ``f = predict(X, lengths)`` with its standard error.

    ``N_test`` (``>= 2``) fresh sequences from ``teacher``, generated ``chunk_size`` at a
    time from ``key`` (the same key gives the same test set); the location is integrated
    out exactly (:func:`excess_error_given_teacher`).
    """
    N_test = check_int("N_test", N_test, 2)

    def statistic(batch: SLRBatch) -> jax.Array:
        return excess_error_given_teacher(config, teacher, batch, predict(batch.X, batch.lengths))

    result = streamed_mean(statistic, key, config, teacher, N_test, chunk_size)
    return ExcessError(float(result.mean), float(result.stderr), result.count)

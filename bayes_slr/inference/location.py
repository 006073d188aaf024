"""Posterior over the location with known directions, and the Bayes estimator (docs/model.md section
2).

With ``k*`` known, ``P(eps* = l | X) = softmax(c_nu chi*)_l`` over the real tokens,
``c_nu = sqrt(nu)`` (spiked) or ``nu`` (max); for max-SLR with ``nu = inf`` it is the
indicator of the argmax, split evenly between tied tokens. The variant's object
computes it (:meth:`~bayes_slr.models.variants.TokenLaw.location_posterior`). The Bayes estimator is
``E[y | X] = sum_l P(eps* = l | X) z*_l``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import jax
import jax.numpy as jnp

from bayes_slr.models.head_states import sequence_evidence_and_prediction
from bayes_slr.models.simulate import Teacher, token_mask
from bayes_slr.models.spec import SLRConfig


def location_posterior(
    chi_star_or_X: jax.Array,
    lengths: jax.Array | None,
    config: SLRConfig,
    k: jax.Array | None = None,
    nu: jax.Array | float | None = None,
) -> jax.Array:
    """``P(eps* = l | X)`` with known directions, zero on padded tokens.

    Parameters
    ----------
    chi_star_or_X : (..., Lbar) scores ``chi* = X k*/sqrt(D)``, or (..., Lbar, D) tokens
        when ``k`` is given.
    lengths : (...,) sequence lengths, or None when every token is real.
    config : SLRConfig
        Variant and ``nu`` (``D`` and ``Delta`` are not used).
    k : (D,) key direction ``k*``, optional: project the tokens on it first.
    nu : optional
        Replaces a finite ``config.nu``, e.g. by a traced value so that one compilation
        serves every ``nu``.

    Returns
    -------
    (..., Lbar) probabilities summing to one over the real tokens: ``softmax(c_nu chi*)``;
    for max-SLR with ``nu = inf``, equal shares on the tokens that attain the maximum.
    """
    chi = chi_star_or_X if k is None else chi_star_or_X @ k / math.sqrt(chi_star_or_X.shape[-1])
    mask = (
        jnp.ones(chi.shape, dtype=bool) if lengths is None else token_mask(lengths, chi.shape[-1])
    )
    return config.law.location_posterior(chi, mask, config.nu if nu is None else nu)


@functools.partial(jax.jit, static_argnames=("config",))
def bayes_estimator(
    X: jax.Array, lengths: jax.Array | None, config: SLRConfig, teacher: Teacher
) -> jax.Array:
    """The Bayes-optimal prediction ``E[y | X] = sum_l P(eps* = l | X) z*_l`` with known directions.

    Parameters
    ----------
    X : (N, Lbar, D) tokens (padding is ignored).
    lengths : (N,) sequence lengths, or None when every token is real.
    config : SLRConfig
        Variant and ``nu`` (static under ``jit``).
    teacher : Teacher
        ``(k*, v*)``.

    Returns
    -------
    (N,) predictions; equal to softmax attention with ``k = c_nu k*``, ``v = v*``.
    """
    posterior = location_posterior(X, lengths, config, k=teacher.k_star)
    z_star = X @ teacher.v_star / math.sqrt(X.shape[-1])
    return jnp.sum(jnp.where(posterior > 0, posterior * z_star, 0.0), axis=-1)


def known_directions_predictor(
    config: SLRConfig, teacher: Teacher
) -> Callable[[jax.Array, jax.Array], jax.Array]:
    """The Bayes estimator with known directions as a predictor ``predict(X, lengths)`` (the
    oracle); on a multi-head task ``E[y | X, k*, v*]`` with the heads' joint states summed out
    (:func:`~bayes_slr.models.head_states.sequence_evidence_and_prediction`).
    """
    if config.multihead:
        k_star, v_star = jnp.asarray(teacher.k_star), jnp.asarray(teacher.v_star)
        return lambda X, lengths: sequence_evidence_and_prediction(
            X, lengths, k_star, v_star, config
        )[1]
    return functools.partial(bayes_estimator, config=config, teacher=teacher)

"""Exact conditional laws shared by the Gibbs-type kernels (docs/model.md section 5).

Given the location ``eps_mu`` of every training sequence:

* ``v | eps`` is a Bayesian linear regression of ``y`` on ``x_{mu, eps_mu} / sqrt(D)`` with
  noise ``Delta`` and prior ``N(0, I)`` (any variant: ``y`` only sees ``z_eps``);
* ``eps_mu | k, v`` are independent categoricals with logits
  ``location_joint_log_weights`` (location law given the scores, times ``N(y; z_l, Delta)``).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from bayes_slr.models.numpyro_models import location_joint_log_weights
from bayes_slr.models.spec import SLRConfig


class GaussianLaw(NamedTuple):
    """``N(mean, P^-1)`` with ``P = cholesky cholesky^T``."""

    mean: jax.Array
    cholesky: jax.Array


def value_conditional(tokens: jax.Array, y: jax.Array, Delta: float) -> GaussianLaw:
    """Law of ``v`` given the tokens ``x_{mu, eps_mu}`` (``(N, D)``): precision ``I + A^T A /
    Delta``,
    mean ``P^-1 A^T y / Delta``, ``A = tokens / sqrt(D)``."""
    D = tokens.shape[-1]
    A = tokens / math.sqrt(D)
    cholesky = jnp.linalg.cholesky(jnp.eye(D) + A.T @ A / Delta)
    mean = jax.scipy.linalg.cho_solve((cholesky, True), A.T @ y / Delta)
    return GaussianLaw(mean, cholesky)


def draw_gaussian(key: jax.Array, law: GaussianLaw) -> jax.Array:
    """One draw from :class:`GaussianLaw`."""
    noise = jax.scipy.linalg.solve_triangular(
        law.cholesky.T, jax.random.normal(key, law.mean.shape), lower=False
    )
    return law.mean + noise


def draw_locations(
    key: jax.Array,
    config: SLRConfig,
    X: jax.Array,
    lengths: jax.Array,
    y: jax.Array,
    k: jax.Array,
    v: jax.Array,
    beta: jax.Array | float = 1.0,
) -> jax.Array:
    """``eps_mu ~ P(eps_mu | X_mu, y_mu, k, v)``, 0-based, ``(N,)``; with ``beta < 1`` the
    tempered law (logits times ``beta``, used during an annealed warm-up)."""
    return jax.random.categorical(
        key, beta * location_joint_log_weights(X, lengths, y, k, v, config), axis=-1
    )


def located_tokens(X: jax.Array, eps: jax.Array) -> jax.Array:
    """``x_{mu, eps_mu}``, ``(N, D)``."""
    return X[jnp.arange(X.shape[0]), eps]

"""Softplus on max-SLR with nu = inf: its optimum is the limit |k| -> inf, checked by independent
routes.

The limit (normalised ReLU weights, argmax when every score is negative) is computed by
quadrature in :mod:`bayes_slr.formulas.large_norm`; here it must agree with a Monte Carlo
of the same weights within 4 standard errors, and the exact error along aligned keys of
growing norm must fall towards it from above.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayes_slr import LengthLaw, SLRConfig
from bayes_slr.formulas.optimum import TREND_NORMS, optimal_population_error
from bayes_slr.formulas.population import population_terms

LAWS = {"L=3": LengthLaw.fixed(3), "L=10": LengthLaw.fixed(10), "L~U{1..4}": LengthLaw.uniform(4)}


def _relu_limit_monte_carlo(key: jax.Array, length: LengthLaw, n: int) -> tuple[float, float]:
    """``1 - A^2/B`` of the limiting weights by Monte Carlo, with its delta-method
    standard error.
    """
    Lbar = length.Lbar
    key_len, key_x = jax.random.split(key)
    lengths = jax.random.choice(key_len, Lbar, (n,), p=jnp.asarray(length.probs)) + 1
    mask = jnp.arange(Lbar) < lengths[:, None]
    x = jnp.where(mask, jax.random.normal(key_x, (n, Lbar)), -jnp.inf)
    eps = jnp.argmax(x, axis=1)
    relu = jnp.where(mask, jnp.maximum(x, 0.0), 0.0)
    total = relu.sum(axis=1, keepdims=True)
    weights = jnp.where(
        total > 0, relu / jnp.where(total > 0, total, 1.0), jax.nn.one_hot(eps, Lbar)
    )
    a = np.asarray(jnp.take_along_axis(weights, eps[:, None], axis=1)[:, 0])
    b = np.asarray(jnp.sum(weights**2, axis=1))
    A, B = a.mean(), b.mean()
    gradient = np.array([-2 * A / B, A**2 / B**2])
    return float(1 - A**2 / B), float(np.sqrt(gradient @ np.cov(a, b) @ gradient / n))


@pytest.mark.parametrize("name", list(LAWS))
def test_softplus_limit_matches_monte_carlo(name):
    config = SLRConfig("max", 1, LAWS[name], math.inf)
    optimum = optimal_population_error("softplus", config)
    assert math.isinf(optimum.overlaps.m_k) and "only as |k| -> inf" in optimum.overlaps.note
    value, stderr = _relu_limit_monte_carlo(jax.random.PRNGKey(7), LAWS[name], 1_000_000)
    assert abs(optimum.error - value) <= 4 * stderr + 1e-7


@pytest.mark.parametrize("name", ["L=3", "L~U{1..4}"])
def test_softplus_error_falls_towards_the_limit_along_growing_norms(name):
    config = SLRConfig("max", 1, LAWS[name], math.inf)
    limit = optimal_population_error("softplus", config).error
    errors = []
    for norm in TREND_NORMS:
        A, B = population_terms("softplus", config, norm, norm**2)
        errors.append(1 - A**2 / B)
    assert all(later < earlier for earlier, later in zip(errors, errors[1:]))
    assert errors[-1] > limit

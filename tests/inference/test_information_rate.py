"""The mutual information by thermodynamic integration along ``alpha``
(:mod:`bayes_slr.inference.information_rate`); its chain rule against the enumerated evidence is
in ``test_evidence.py``."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayes_slr.errors import ConfigError
from bayes_slr.inference.information_rate import (
    InformationRate,
    conditional_log_predictive,
    integrate_rates,
    location_draws,
)
from bayes_slr.inference.kernels.conditionals import located_tokens
from bayes_slr.inference.kernels.gibbs import direction_conditionals, draw_directions
from bayes_slr.models.numpyro_models import location_joint_log_weights
from bayes_slr.models.simulate import draw_teacher, simulate
from bayes_slr.models.spec import LengthLaw, SLRConfig

CONFIG = SLRConfig("spiked", 6, LengthLaw.fixed(3), 2.0, 0.1)


def test_closed_form_predictive_matches_monte_carlo_over_the_directions(key):
    """Given the training locations, ``p(s | eps, data)`` in closed form equals the mean over
    200000 draws of ``(k, v)`` from their Gaussian conditionals of the sequence's likelihood
    (location summed out), within 4 standard errors of that mean, for three fresh sequences."""
    key_teacher, key_data, key_new, key_eps, key_mc = jax.random.split(key, 5)
    teacher = draw_teacher(key_teacher, CONFIG.D)
    batch = simulate(key_data, CONFIG, teacher, 5)
    new = simulate(key_new, CONFIG, teacher, 3)
    eps = jax.random.randint(key_eps, (5,), 0, 3)
    X, y = jnp.asarray(batch.X), jnp.asarray(batch.y)
    fresh = (jnp.asarray(new.X), jnp.asarray(new.lengths), jnp.asarray(new.y))
    closed = np.asarray(conditional_log_predictive(CONFIG, (X, y), fresh, eps))
    law = direction_conditionals(located_tokens(X, eps), y, CONFIG)

    def likelihood(key):
        k, v = draw_directions(*jax.random.split(key), law)
        return jax.nn.logsumexp(location_joint_log_weights(*fresh[:2], fresh[2], k, v, CONFIG), -1)

    values = np.exp(np.asarray(jax.vmap(likelihood)(jax.random.split(key_mc, 200_000))))
    mean = values.mean(axis=0)
    stderr = values.std(axis=0) / math.sqrt(values.shape[0]) / mean
    assert np.all(np.abs(np.log(mean) - closed) < 4 * stderr), (np.log(mean), closed, stderr)


def test_integrated_rates_are_the_chain_rule_sum_for_a_piecewise_linear_rate():
    """``integrate_rates`` returns ``(1 / D) sum_{n < N} g(n)`` exactly when ``g`` is linear between
    the grid points (its endpoint term), and refuses a grid that does not start at 0."""

    def rate(n: int) -> float:
        return 3.0 - 0.1 * n if n <= 4 else 2.6 - 0.3 * (n - 4)

    rates = [InformationRate(n, "random", rate(n), 0.01, 0.0, 1, 0.5, 0.5) for n in (0, 4, 10)]
    result = integrate_rates(5, rates)
    assert result.information == pytest.approx(sum(rate(n) for n in range(10)) / 5)
    assert result.N == 10
    with pytest.raises(ConfigError, match="n = 0"):
        integrate_rates(5, rates[1:])


def test_location_draws_from_the_true_locations_agree_with_random_starts(key):
    """Collapsed Gibbs at ``Delta = 0.1``: chains from the true locations (an exact posterior
    draw) and from uniform ones reach the same law (their mean agreement with the true locations
    within 0.05)."""
    config = CONFIG.replace(D=10)
    key_teacher, key_data, key_chains = jax.random.split(key, 3)
    teacher = draw_teacher(key_teacher, config.D)
    batch = simulate(key_data, config, teacher, 15)
    runs = [
        location_draws(key_chains, config, batch, init=init, chains=8, warmup=50, samples=200)
        for init in ("informed", "random")
    ]
    assert abs(runs[0].match - runs[1].match) < 0.05, runs

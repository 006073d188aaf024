"""The NumPyro SLR models: summed-out and enumerated forms agree; prior predictive matches the
simulator.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpyro.infer import Predictive
from scipy import stats

from bayes_slr import LengthLaw, SLRConfig
from bayes_slr.models.numpyro_models import (
    enumerated_log_density,
    marginal_log_density,
    slr_model_enumerated,
    slr_model_marginal,
)
from bayes_slr.models.simulate import draw_teacher, simulate

D = 12
CONFIGS = [
    SLRConfig("spiked", D, LengthLaw.fixed(4), 2.0, 0.2),
    SLRConfig("spiked", D, LengthLaw.uniform(4), 2.0, 0.2),
    SLRConfig("max", D, LengthLaw.fixed(4), 1.5, 0.2),
    SLRConfig("max", D, LengthLaw.uniform(4), 1.5, 0.2),
    SLRConfig("max", D, LengthLaw.uniform(4), math.inf, 0.2),
]


def random_params(seed):
    k, v = jax.random.normal(jax.random.PRNGKey(seed), (2, D))
    return {"k": k, "v": v}


@pytest.mark.parametrize(
    "config", CONFIGS, ids=lambda c: f"{c.variant}-{c.length.describe()}-nu{c.nu}"
)
def test_summed_out_and_enumerated_log_densities_agree(config):
    batch = simulate(jax.random.PRNGKey(0), config, draw_teacher(jax.random.PRNGKey(1), D), 40)
    params = random_params(2)
    summed = marginal_log_density(params, config, batch.X, batch.lengths, batch.y)
    enumerated = enumerated_log_density(params, config, batch.X, batch.lengths, batch.y)
    assert np.isfinite(float(summed))
    assert abs(float(summed - enumerated)) <= 1e-8 * abs(float(summed))


@pytest.mark.parametrize("config", [CONFIGS[1], CONFIGS[3]], ids=["spiked", "max"])
def test_padded_tokens_do_not_change_the_log_density(config):
    batch = simulate(jax.random.PRNGKey(4), config, draw_teacher(jax.random.PRNGKey(5), D), 40)
    assert not bool(jnp.all(batch.mask)), "need some padding to test"
    garbage = jax.random.normal(jax.random.PRNGKey(6), batch.X.shape) * 5.0
    X_dirty = jnp.where(batch.mask[..., None], batch.X, garbage)
    params = random_params(7)
    for log_density in (marginal_log_density, enumerated_log_density):
        clean = log_density(params, config, batch.X, batch.lengths, batch.y)
        dirty = log_density(params, config, X_dirty, batch.lengths, batch.y)
        assert float(clean) == pytest.approx(float(dirty), rel=1e-12)


def test_spiked_normaliser_keeps_the_key_norm_in_the_likelihood():
    """With the |k|^2 term the log-density cannot grow without bound along k -> s k."""
    config = CONFIGS[0]
    teacher = draw_teacher(jax.random.PRNGKey(8), D)
    batch = simulate(jax.random.PRNGKey(9), config, teacher, 200)
    values = [
        float(
            marginal_log_density(
                {"k": s * teacher.k_star, "v": teacher.v_star},
                config,
                batch.X,
                batch.lengths,
                batch.y,
            )
        )
        for s in (1.0, 3.0, 10.0)
    ]
    assert values[0] > values[1] > values[2]


@pytest.mark.parametrize("config", [CONFIGS[1], CONFIGS[3]], ids=["spiked", "max"])
def test_prior_predictive_matches_simulator_in_law(config):
    """Two-sample Kolmogorov-Smirnov tests on chi* at the location and on y.

    Both sides draw a fresh teacher from the prior for every pair of sequences, so the
    pooled values are (nearly) independent and the KS p-value is valid.
    """
    draws, per_draw = 2_000, 2

    def simulator_draw(key):
        key_teacher, key_data = jax.random.split(key)
        batch = simulate(key_data, config, draw_teacher(key_teacher, D), per_draw)
        return (
            jnp.take_along_axis(batch.chi_star, batch.eps[:, None], 1)[:, 0],
            batch.y,
            batch.lengths,
        )

    def model_draw(key, lengths):
        prior = Predictive(slr_model_enumerated, num_samples=1)(key, config, lengths)
        chi = prior["X"][0] @ prior["k"][0] / math.sqrt(D)
        return jnp.take_along_axis(chi, prior["eps"][0][:, None], 1)[:, 0], prior["y"][0]

    sim_chi, sim_y, sim_lengths = jax.vmap(simulator_draw)(
        jax.random.split(jax.random.PRNGKey(12), draws)
    )
    # the model takes the lengths as given: feed it lengths drawn from the same law
    other_lengths = jax.vmap(simulator_draw)(jax.random.split(jax.random.PRNGKey(13), draws))[2]
    model_chi, model_y = jax.vmap(model_draw)(
        jax.random.split(jax.random.PRNGKey(11), draws), other_lengths
    )
    model_chi, model_y = np.asarray(model_chi).ravel(), np.asarray(model_y).ravel()
    assert stats.ks_2samp(model_chi, np.asarray(sim_chi).ravel()).pvalue > 1e-4
    assert stats.ks_2samp(model_y, np.asarray(sim_y).ravel()).pvalue > 1e-4


def test_marginal_model_runs_under_numpyro_trace():
    config = CONFIGS[2]
    batch = simulate(jax.random.PRNGKey(0), config, draw_teacher(jax.random.PRNGKey(1), D), 10)
    from numpyro import handlers

    trace = handlers.trace(handlers.seed(slr_model_marginal, 0)).get_trace(
        config, batch.X, batch.lengths, batch.y
    )
    assert set(trace) == {"k", "v", "tokens", "location_and_y"}


@pytest.mark.parametrize("config", [CONFIGS[1], CONFIGS[3]], ids=["spiked", "max"])
def test_infer_discrete_recovers_the_location_posterior(config):
    """Draws of ``eps`` from infer_discrete (temperature 1) are calibrated against the exact
    posterior softmax(location_joint_log_weights); temperature 0 returns its argmax."""
    from numpyro import handlers
    from numpyro.contrib.funsor import config_enumerate, infer_discrete

    from bayes_slr.models.numpyro_models import ENUM_DIM, location_joint_log_weights

    teacher = draw_teacher(jax.random.PRNGKey(20), D)
    batch = simulate(jax.random.PRNGKey(21), config, teacher, 600)
    exact = np.asarray(
        jax.nn.softmax(
            location_joint_log_weights(batch.X, batch.lengths, batch.y, *teacher, config), -1
        )
    )
    model = handlers.condition(slr_model_enumerated, {"k": teacher.k_star, "v": teacher.v_star})

    def draw(temperature):
        sampler = infer_discrete(
            config_enumerate(model),
            first_available_dim=ENUM_DIM,
            temperature=temperature,
            rng_key=jax.random.PRNGKey(22),
        )
        trace = handlers.trace(sampler).get_trace(config, batch.lengths, X=batch.X, y=batch.y)
        return np.asarray(trace["eps"]["value"])

    hits = np.asarray(jax.nn.one_hot(draw(1), config.Lbar))
    z_positions = (hits - exact).sum(0) / np.sqrt((exact * (1 - exact)).sum(0) + 1e-300)
    assert np.all(np.abs(z_positions[(exact * (1 - exact)).sum(0) > 0]) < 4.5)
    assert np.all(exact[np.arange(600), draw(1)] > 0)  # never a padded or impossible token
    np.testing.assert_array_equal(draw(0), exact.argmax(1))

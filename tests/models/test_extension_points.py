"""A new variant or a new activation is one object in one place: shown here by toys defined in this
file alone.

* ``squared-spiked``: a planted token law with spike amplitude ``nu`` instead of
  ``sqrt(nu)``, i.e. spiked SLR reparametrised (``nu -> nu^2``). Every layer (simulator,
  NumPyro model, Bayes risk by quadrature and Monte Carlo, population theory, AMP's channel,
  the sampler registry) must give exactly the spiked numbers at ``nu^2``: nothing may branch
  on the name ``"spiked"``.
* ``min``: a tilted law whose location is the *minimum* of the scores (tilt ``-nu``); by
  the symmetry ``k* -> -k*`` its Bayes error is max-SLR's.
* ``softmax2``: softmax at twice the inverse temperature, ``log phi = 2 chi``; its
  population terms at ``(m_k, q_k)`` are softmax's at ``(2 m_k, 4 q_k)``, and training and
  prediction accept it by name. An activation without theory terms is refused by name.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayes_slr import ConfigError, LengthLaw, SLRConfig
from bayes_slr.attention.activations import Activation, register_activation, unregister_activation
from bayes_slr.attention.estimators import AttentionParams, predict
from bayes_slr.formulas.bayes import bayes_error_exact
from bayes_slr.formulas.population import population_error, population_terms
from bayes_slr.inference import amp
from bayes_slr.inference.bayes_risk import bayes_risk_mc
from bayes_slr.inference.sampler_registry import auto_sampler
from bayes_slr.models.numpyro_models import marginal_log_density
from bayes_slr.models.simulate import draw_teacher, simulate
from bayes_slr.models.variants import PlantedLaw, TiltedLaw, register_variant, unregister_variant

NU = 1.5  # nu^2 = 2.25 exactly in float64, so sqrt(nu^2) == nu bit for bit


class SquaredSpiked(PlantedLaw):
    name = "squared-spiked"
    default_nu = 1.0

    def amplitude(self, nu):
        return nu

    def nu_with_c(self, c):
        return c


class MinLaw(TiltedLaw):
    name = "min"
    default_nu = 2.0

    def tilt(self, nu):
        return -nu

    def nu_with_c(self, c):
        return -c


@pytest.fixture(scope="module", autouse=True)
def toys():
    register_variant(SquaredSpiked())
    register_variant(MinLaw())
    register_activation(
        Activation(
            "softmax2",
            normalised=True,
            score=lambda chi, c=0.0: jnp.exp(2 * chi),
            log_phi=lambda chi: 2 * chi,
        )
    )
    register_activation(Activation("cubic", normalised=False, score=lambda chi, c=0.0: chi**3))
    yield
    for name in ("squared-spiked", "min"):
        unregister_variant(name)
    for name in ("softmax2", "cubic"):
        unregister_activation(name)


def _pair(L: int = 3, D: int = 6, Delta: float = 0.2) -> tuple[SLRConfig, SLRConfig]:
    length = LengthLaw.fixed(L)
    return SLRConfig("squared-spiked", D, length, NU, Delta), SLRConfig(
        "spiked", D, length, NU**2, Delta
    )


def test_toy_variant_simulates_exactly_the_reparametrised_spiked_law():
    toy, spiked = _pair()
    teacher = draw_teacher(jax.random.PRNGKey(0), toy.D)
    a, b = (simulate(jax.random.PRNGKey(1), config, teacher, 64) for config in (toy, spiked))
    for name in ("X", "y", "eps", "lengths"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))


def test_toy_variant_numpyro_density_matches_spiked():
    toy, spiked = _pair()
    teacher = draw_teacher(jax.random.PRNGKey(2), toy.D)
    batch = simulate(jax.random.PRNGKey(3), toy, teacher, 32)
    params = {"k": jnp.linspace(-1, 1, toy.D), "v": jnp.linspace(1, -0.5, toy.D)}
    values = [
        marginal_log_density(params, c, batch.X, batch.lengths, batch.y) for c in (toy, spiked)
    ]
    assert float(values[0]) == pytest.approx(float(values[1]), rel=1e-12)


def test_toy_variants_bayes_risk_exact_and_monte_carlo():
    toy, spiked = _pair()
    exact_toy, exact_spiked = bayes_error_exact(toy), bayes_error_exact(spiked)
    assert exact_toy.value == pytest.approx(exact_spiked.value, abs=1e-12)
    mc = bayes_risk_mc(toy, 40_000, jax.random.PRNGKey(4)).bayes_error
    assert abs(mc.mean - exact_toy.value) <= 4 * mc.stderr + exact_toy.error_bound
    minimum = SLRConfig("min", 1, LengthLaw.fixed(4), 2.0)
    maximum = minimum.replace(variant="max")
    assert bayes_error_exact(minimum).value == pytest.approx(
        bayes_error_exact(maximum).value, abs=1e-12
    )
    mc_min = bayes_risk_mc(minimum, 40_000, jax.random.PRNGKey(5))
    assert (
        abs(mc_min.bayes_error.mean - bayes_error_exact(maximum).value)
        <= 4 * mc_min.bayes_error.stderr + 1e-7
    )
    assert abs(mc_min.nishimori_gap.mean) <= 4 * mc_min.nishimori_gap.stderr


def test_toy_variants_reach_amp_and_the_sampler_registry():
    """AMP's output channel and prior, and the sampler registry, ask the variant object: the toy
    planted law gives spiked's channel at ``nu^2`` bit for bit (the same arithmetic), and ``auto``
    picks the sampler of each toy's family.
    """
    toy, spiked = _pair(L=4)
    key_omega, key_y = jax.random.split(jax.random.PRNGKey(7))
    omega = jax.random.normal(key_omega, (6, 4, 2))
    y = jax.random.normal(key_y, (6,))
    mask = jnp.ones((6, 4), bool).at[::2, 3].set(False)
    V = jnp.array([[0.4, 0.05], [0.05, 0.3]])
    toy_g, spiked_g = (
        jax.jit(jax.vmap(functools.partial(amp.output_denoiser, config, V=V)))(omega, y, mask)
        for config in (toy, spiked)
    )
    for a, b in zip(toy_g, spiked_g):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(amp.prior_precision(toy, 50), amp.prior_precision(spiked, 50))
    assert auto_sampler(toy.law) == "gibbs" and auto_sampler(MinLaw()) == "gibbs-hmc"


@pytest.mark.parametrize("activation", ["softmax", "linear"])
def test_toy_variant_population_layer_matches_spiked(activation):
    toy, spiked = _pair()
    args = (0.7, 0.9, 0.8, 1.1)
    assert population_error(activation, toy, *args) == pytest.approx(
        population_error(activation, spiked, *args), abs=1e-10
    )


def test_new_activation_is_one_record():
    config = SLRConfig("spiked", 1, LengthLaw.fixed(3), 2.0)
    toy = population_terms("softmax2", config, 0.4, 0.3)
    reference = population_terms("softmax", config, 0.8, 1.2)
    np.testing.assert_allclose(toy, reference, atol=1e-9)
    X = jax.random.normal(jax.random.PRNGKey(6), (5, 3, 4))
    k, v = jnp.arange(4.0) / 4, jnp.ones(4)
    lengths = jnp.array([3, 2, 1, 3, 3])
    np.testing.assert_allclose(
        predict(AttentionParams(k, v, jnp.zeros(())), X, lengths, "softmax2"),
        predict(AttentionParams(2 * k, v, jnp.zeros(())), X, lengths, "softmax"),
        atol=1e-12,
    )


def test_activation_without_theory_terms_is_refused_by_name():
    config = SLRConfig("spiked", 1, LengthLaw.fixed(3), 2.0)
    with pytest.raises(ConfigError, match="activation cubic has no population-theory terms"):
        population_terms("cubic", config, 0.4, 0.3)
    with pytest.raises(ConfigError, match="activation must be one of"):
        population_terms("quartic", config, 0.4, 0.3)

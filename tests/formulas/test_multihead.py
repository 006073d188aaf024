"""Multi-head SLR (docs/multihead.md): the Bayes error by quadrature against Monte Carlo, the
Nishimori identity, one head always present against the one-head exact error, the posterior
against the formula of the model, and the simulator against the exact error end to end.

Tolerances: Monte Carlo comparisons allow 4 standard errors plus the quadrature bound;
quadrature-vs-quadrature comparisons the stated bounds.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayes_slr import ConfigError, LengthLaw, SLRConfig
from bayes_slr.formulas.bayes import bayes_error_exact, presence_bayes_error_exact
from bayes_slr.inference.bayes_risk import bayes_risk_mc
from bayes_slr.models.simulate import draw_task_teacher, simulate
from bayes_slr.models.variants import get_variant

MC_SAMPLES = 2**16


def task(H: int, rho: float, length: LengthLaw, nu: float, variant: str = "spiked", **kw):
    return SLRConfig(variant, 1, length, nu, heads=H, presence=rho, **kw)


@pytest.mark.parametrize(
    ("H", "rho", "length", "nu", "variant"),
    [
        (2, 0.5, LengthLaw.fixed(3), 2.0, "spiked"),
        (1, 0.25, LengthLaw.fixed(5), 1.0, "spiked"),
        (3, 0.75, LengthLaw.uniform(4), 4.0, "spiked"),
        (2, 1.0, LengthLaw.fixed(3), 2.0, "spiked"),
        (2, 1.0, LengthLaw.fixed(3), 2.0, "max"),
    ],
)
def test_quadrature_matches_monte_carlo_and_nishimori_holds(H, rho, length, nu, variant):
    config = task(H, rho, length, nu, variant)
    exact = presence_bayes_error_exact(config)
    mc = bayes_risk_mc(config, MC_SAMPLES, jax.random.PRNGKey(3))
    error = mc.bayes_error
    assert abs(error.mean - exact.value) <= 4 * error.stderr + exact.error_bound
    gap = mc.nishimori_gap  # E[f y] - E[f^2]: zero for the true posterior
    assert abs(gap.mean) <= 4 * gap.stderr


@pytest.mark.parametrize("variant", ["spiked", "max"])
@pytest.mark.parametrize("length", [LengthLaw.fixed(3), LengthLaw.uniform(5)])
def test_one_head_always_present_is_the_one_head_error(variant, length):
    config = SLRConfig(variant, 1, length, 2.0)
    new, old = presence_bayes_error_exact(config), bayes_error_exact(config)
    assert abs(new.value - old.value) <= new.error_bound + old.error_bound


def test_heads_do_not_change_the_error_and_absence_raises_it():
    """Independent heads share one law: the error does not depend on ``H``; it grows as ``rho``
    falls (less is known about where, and whether, a head's token is)."""
    length = LengthLaw.fixed(3)
    errors = [presence_bayes_error_exact(task(2, rho, length, 2.0)).value for rho in (1, 0.5)]
    assert presence_bayes_error_exact(task(5, 0.5, length, 2.0)).value == errors[1]
    assert errors[0] < errors[1]
    assert presence_bayes_error_exact(task(2, 0.5, length, 0.0)).value == pytest.approx(
        1 - 0.5 / 3, abs=1e-9
    )  # nu = 0: q_l = rho / L for every token, 1 - L (rho / L)^2 / rho


@pytest.mark.parametrize("variant", ["spiked", "max"])
def test_zero_score_log_weight_is_the_location_log_weight_of_zero_scores(variant):
    law = get_variant(variant)
    lengths = np.asarray([1.0, 3.0, 7.0])
    for length, value in zip(lengths, law.zero_score_log_weight(1.5, lengths), strict=True):
        zeros = jnp.zeros(int(length))
        expected = law.location_log_weights(zeros, jnp.ones(int(length), bool), 1.5)
        np.testing.assert_allclose(np.asarray(expected), value, rtol=1e-14)


def test_head_posterior_is_the_models_formula():
    """``P(b = 1, eps = l | X) = (rho/L) e^a_l / ((1 - rho) + (rho/L) sum e^a)``, ``a_l = sqrt(nu)
    chi_l - nu/2``; at ``rho = 1`` the one-head location posterior."""
    law, nu, rho = get_variant("spiked"), 2.0, 0.3
    chi = jax.random.normal(jax.random.PRNGKey(0), (5, 4))
    mask = jnp.arange(4) < jnp.asarray([4, 4, 2, 1, 3])[:, None]
    lengths = jnp.sum(mask, axis=1, keepdims=True)
    weights = jnp.where(mask, rho / lengths * jnp.exp(math.sqrt(nu) * chi - nu / 2), 0.0)
    expected = weights / ((1 - rho) + jnp.sum(weights, axis=1, keepdims=True))
    q = law.head_location_posterior(chi, mask, nu, rho)
    np.testing.assert_allclose(np.asarray(q), np.asarray(expected), rtol=1e-12)
    np.testing.assert_allclose(
        np.asarray(law.head_location_posterior(chi, mask, nu, 1.0)),
        np.asarray(law.location_posterior(chi, mask, nu)),
        rtol=1e-12,
    )


def test_simulated_bayes_predictor_scores_the_exact_error():
    """End to end at finite ``D``: with an exact teacher the heads' scores follow their
    population law exactly, so the Bayes predictor's excess error on simulated data estimates
    the exact error; the outputs' signal has variance 1."""
    config = SLRConfig("spiked", 12, LengthLaw.fixed(3), 2.0, 0.1, heads=2, presence=0.5)
    teacher = draw_task_teacher(jax.random.PRNGKey(1), config, exact=True)
    batch = simulate(jax.random.PRNGKey(2), config, teacher, 40_000)
    mask = batch.mask[:, None, :]
    q = config.law.head_location_posterior(batch.chi_star, mask, config.nu, config.presence)
    f = jnp.sum(q * batch.z_star, axis=(1, 2)) / math.sqrt(config.presence * config.heads)
    excess = np.asarray((batch.y - f) ** 2 - config.Delta)
    exact = presence_bayes_error_exact(config)
    stderr = excess.std(ddof=1) / math.sqrt(excess.size)
    assert abs(excess.mean() - exact.value) <= 4 * stderr + exact.error_bound
    signal = np.asarray(batch.y)
    assert abs(signal.var() - (1 + config.Delta)) <= 4 * signal.var() * math.sqrt(2 / signal.size)
    assert abs(float(batch.present.mean()) - config.presence) <= 4 * math.sqrt(
        0.25 / batch.present.size
    )


def test_one_head_always_present_keeps_the_one_head_draws():
    """``heads = 1``, ``presence = 1`` is one-head SLR: the same batch, field by field."""
    one = SLRConfig("spiked", 8, LengthLaw.fixed(3), 2.0, 0.1)
    explicit = SLRConfig("spiked", 8, LengthLaw.fixed(3), 2.0, 0.1, heads=1, presence=1.0)
    assert one == explicit and not one.multihead and one.to_dict() == explicit.to_dict()
    teacher = draw_task_teacher(jax.random.PRNGKey(0), one)
    for a, b in zip(
        simulate(jax.random.PRNGKey(1), one, teacher, 50),
        simulate(jax.random.PRNGKey(1), explicit, teacher, 50),
        strict=True,
    ):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"presence": 0.0}, "presence must be a probability in (0, 1], got 0.0"),
        ({"presence": 1.5}, "presence must be a probability in (0, 1], got 1.5"),
        ({"presence": float("nan")}, "presence must be a probability in (0, 1]"),
        ({"heads": 0}, "heads must be an integer >= 1"),
        ({"variant": "max", "presence": 0.5}, "presence must be 1 for the max variant"),
    ],
)
def test_bad_heads_or_presence_are_refused(changes, message):
    settings = {"variant": "spiked", "D": 4, "length": LengthLaw.fixed(3), "nu": 2.0, **changes}
    with pytest.raises(ConfigError) as caught:
        SLRConfig(**settings)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_a_multi_head_record_round_trips():
    config = SLRConfig("spiked", 4, LengthLaw.fixed(3), 2.0, 0.1, heads=3, presence=0.25)
    record = config.to_dict()
    assert (record["heads"], record["presence"]) == (3, 0.25)
    assert SLRConfig.from_dict(record) == config

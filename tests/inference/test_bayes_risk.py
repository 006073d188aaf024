"""Bayes risk: exact quadrature, Monte Carlo over chi*, and simulated data must agree.

Tolerances: two estimates agree when ``|a - b| <= 4 sqrt(se_a^2 + se_b^2) + bound``, with
``se`` the Monte Carlo standard errors and ``bound`` the quadrature error bound of the
exact route (a false alarm has probability about 6e-5 per comparison).
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayes_slr import LengthLaw, SLRConfig
from bayes_slr.formulas.bayes import bayes_error_exact
from bayes_slr.inference.bayes_risk import (
    bayes_risk_empirical,
    bayes_risk_mc,
    draw_population_scores,
)
from bayes_slr.inference.location import location_posterior

Z = 4.0
ROUNDING = 1e-12  # floating-point rounding of the exact route, on top of its quadrature bound

# (variant, length law, nu); D and Delta only matter for the simulated-data route. Points
# share length laws so that one compiled Monte Carlo loop serves several of them.
POINTS = [
    SLRConfig("spiked", 4, LengthLaw.fixed(3), 1.0, 0.0),
    SLRConfig("spiked", 4, LengthLaw.uniform(4), 2.0, 0.25),
    SLRConfig("max", 4, LengthLaw.uniform(4), 1.5, 0.0),
    SLRConfig("max", 4, LengthLaw.uniform(4), math.inf, 0.25),
]
LARGE_L = SLRConfig("spiked", 2, LengthLaw.fixed(1000), 9.0, 0.0)
MC_SAMPLES = 2**16


def _ids(config: SLRConfig) -> str:
    return f"{config.variant}-{config.length.describe()}-nu{config.nu:g}"


def _agree(a: float, se_a: float, b: float, se_b: float, bound: float = 0.0) -> bool:
    return abs(a - b) <= Z * math.hypot(se_a, se_b) + bound


@pytest.mark.slow
@pytest.mark.parametrize("config", POINTS, ids=_ids)
def test_exact_mc_and_empirical_routes_agree(
    key: jax.Array, full_size: bool, config: SLRConfig
) -> None:
    mc_samples, data_samples = (2**22, 2**17) if full_size else (MC_SAMPLES, 2**13)
    exact = bayes_error_exact(config)
    mc = bayes_risk_mc(config, mc_samples, key)
    data = bayes_risk_empirical(config, data_samples, jax.random.fold_in(key, 1))
    error, gap = mc.bayes_error, mc.nishimori_gap
    bound = exact.error_bound + ROUNDING
    assert exact.error_bound < 1e-7
    assert _agree(error.mean, error.stderr, exact.value, 0.0, bound), (error, exact)
    assert _agree(data.mean, data.stderr, exact.value, 0.0, bound), (data, exact)
    assert _agree(data.mean, data.stderr, error.mean, error.stderr), (data, error)
    assert _agree(gap.mean, gap.stderr, 0.0, 0.0), gap  # Nishimori: E[p_eps] = E[sum p^2]
    if math.isfinite(config.nu):  # the checks above have power
        assert 0 < error.stderr < 0.01 and 0 < data.stderr < 0.05


@pytest.mark.slow
def test_exact_and_mc_agree_at_large_length(key: jax.Array, full_size: bool) -> None:
    config = LARGE_L.replace(length=LengthLaw.fixed(100_000)) if full_size else LARGE_L
    exact = bayes_error_exact(config)
    mc = bayes_risk_mc(config, 2**14 if full_size else 2**11, key)
    assert _agree(
        mc.bayes_error.mean, mc.bayes_error.stderr, exact.value, 0.0, exact.error_bound + ROUNDING
    )
    assert _agree(mc.nishimori_gap.mean, mc.nishimori_gap.stderr, 0.0, 0.0)
    assert 0 < mc.bayes_error.stderr < 0.01


@functools.partial(jax.jit, static_argnames=("config",))
def _nishimori_gaps(key: jax.Array, config: SLRConfig) -> jax.Array:
    """Per-sequence ``p_eps - sum p^2`` for the true posterior and one at twice its inverse
    temperature.
    """
    chi, lengths, eps = draw_population_scores(key, config, 2**15)
    mask = jnp.arange(config.Lbar) < lengths[:, None]
    too_cold = jax.nn.softmax(jnp.where(mask, 2 * config.c_nu * chi, -jnp.inf), axis=-1, where=mask)
    gaps = []
    for p in (location_posterior(chi, lengths, config), too_cold):
        gaps.append(jnp.take_along_axis(p, eps[:, None], axis=-1)[:, 0] - jnp.sum(p**2, axis=-1))
    return jnp.stack(gaps)


def test_nishimori_identity_holds_only_for_the_true_posterior(key: jax.Array) -> None:
    """``E[p_eps] - E[sum p^2]`` is zero at the true temperature and detectably not at twice it."""
    gaps = np.asarray(_nishimori_gaps(key, POINTS[1]))
    means, stderrs = gaps.mean(axis=1), gaps.std(axis=1, ddof=1) / math.sqrt(gaps.shape[1])
    assert abs(means[0]) <= Z * stderrs[0]
    assert abs(means[1]) > 2 * Z * stderrs[1]


@pytest.mark.parametrize("config", POINTS[:3], ids=_ids)
def test_no_signal_gives_one_minus_mean_inverse_length(key: jax.Array, config: SLRConfig) -> None:
    """``nu = 0``: the posterior is uniform, so the error is ``1 - E[1/L]``."""
    config = config.replace(nu=0.0)
    expected = 1.0 - sum(p / L for L, p in config.length.support())
    exact = bayes_error_exact(config)
    assert abs(exact.value - expected) <= exact.error_bound + ROUNDING
    mc = bayes_risk_mc(config, MC_SAMPLES, key).bayes_error
    assert _agree(mc.mean, mc.stderr, expected, 0.0, ROUNDING)
    if config.length.is_fixed:
        assert mc.stderr < 1e-9  # every draw gives sum p^2 = 1/L


def test_exact_error_is_zero_for_one_token_and_grows_with_L() -> None:
    for variant, nu in (("spiked", 4.0), ("max", 1.0)):
        values = [
            bayes_error_exact(SLRConfig(variant, 1, LengthLaw.fixed(L), nu))
            for L in (1, 2, 3, 10, 100, 10_000)
        ]
        assert abs(values[0].value) <= values[0].error_bound + ROUNDING
        steps = np.diff([v.value for v in values])
        assert np.all(steps > 2 * max(v.error_bound + ROUNDING for v in values)), (variant, steps)


@pytest.mark.parametrize("config", POINTS[:3], ids=_ids)
def test_monte_carlo_error_decreases_with_nu(key: jax.Array, config: SLRConfig) -> None:
    """Same key for every ``nu`` (common random numbers); each step exceeds 4 combined standard
    errors.
    """
    estimates = [
        bayes_risk_mc(config.replace(nu=nu), MC_SAMPLES, key).bayes_error
        for nu in (0, 0.5, 1, 2, 4)
    ]
    for before, after in zip(estimates, estimates[1:]):
        assert before.mean - after.mean > Z * math.hypot(before.stderr, after.stderr)

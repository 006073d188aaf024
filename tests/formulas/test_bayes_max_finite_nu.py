"""Bayes-optimal state evolution for max-SLR with finite ``nu`` (docs/theory.md, part B).

The location posterior ``E_h[softmax(nu h)]`` (quadrature in ``log t`` over tabulated
one-token Laplace transforms) is checked against brute Monte Carlo over ``h``, its two
limits (``V_k -> 0``: ``softmax(nu omega)``; ``nu -> inf``: the argmax route) and its
normalisation; the state evolution against its ``alpha -> 0`` and ``alpha -> inf`` limits,
the Nishimori identity and the Monte Carlo evaluation of its own error.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import bayes_slr
from bayes_slr.errors import ConfigError
from bayes_slr.formulas.bayes import bayes_error_exact
from bayes_slr.formulas.replica_bayes import bayes_replica_point, location_log_posterior
from bayes_slr.models.spec import LengthLaw, SLRConfig
from bayes_slr.numerics.location_integrals import MAX_FINITE_NU

MAX_NU2 = SLRConfig("max", 1, LengthLaw.fixed(3), 2.0)
MASK = jnp.array([True, True, True, False])  # three real tokens and one padded
posterior_jit = jax.jit(location_log_posterior, static_argnums=0)


def _log_posterior(nu: float, omega, V: float) -> np.ndarray:
    return np.asarray(posterior_jit(MAX_NU2.replace(nu=nu), jnp.asarray(omega), V, MASK))


def _monte_carlo_posterior(
    nu: float, omega, V: float, samples: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """``E_h[softmax(nu h)]`` over the real tokens by brute sampling of ``h``: mean and standard
    error.
    """
    real = np.asarray(MASK)
    h = np.asarray(omega)[real] + math.sqrt(V) * np.random.default_rng(seed).standard_normal(
        (samples, real.sum())
    )
    weights = np.asarray(jax.nn.softmax(nu * h, axis=-1))
    return weights.mean(axis=0), weights.std(axis=0) / math.sqrt(samples)


@pytest.mark.parametrize(
    ("nu", "V", "seed"), [(2.0, 1.0, 1), (2.0, 0.3, 2), (0.7, 0.6, 3), (10.0, 0.2, 4)]
)
def test_location_posterior_matches_monte_carlo(nu, V, seed):
    """Quadrature vs 200000 draws of ``h``: within 4 standard errors per token.

    The quadrature error (about 1e-9, see the limits below) is far below the standard
    errors (about 1e-3); 4 standard errors over 12 comparisons fail by chance with
    probability below 1e-3. The posterior sums to one over the real tokens (the integrand
    of the sum is an exact derivative; the quadrature error bounds the defect) and is
    zero on the padded token.
    """
    omega = np.random.default_rng(seed).normal(0.0, 1.5, MASK.size)
    log_post = _log_posterior(nu, omega, V)
    mean, stderr = _monte_carlo_posterior(nu, omega, V, 200_000, seed)
    assert np.all(np.abs(np.exp(log_post[:3]) - mean) < 4 * stderr)
    assert abs(np.exp(log_post[:3]).sum() - 1.0) < 1e-8
    assert log_post[3] == -np.inf


def test_location_posterior_at_vanishing_variance_is_softmax():
    """``V_k -> 0``: ``log E_h[softmax(nu h)] = log softmax(nu omega) + O(nu^2 V_k)``.

    At ``V_k = 1e-12`` the ``O(nu^2 V_k)`` term is 1e-10; the tolerance 1e-8 is ten times the
    quadrature error seen at ``s = nu sqrt(V_k) -> 0`` (about 1e-9: trapezoid spacing 0.44 in
    ``log t`` on a unit-scale integrand).
    """
    omega = np.array([0.3, -1.2, 2.0, 0.0])
    for nu in (0.5, 2.0, 10.0):
        expected = np.asarray(jax.nn.log_softmax(nu * omega[:3]))
        assert np.max(np.abs(_log_posterior(nu, omega, 1e-12)[:3] - expected)) < 1e-8


def test_location_posterior_tends_to_the_argmax_route_like_one_over_nu_squared():
    """``nu -> inf``: ``E[softmax(nu h)] - P(argmax)`` is ``O(1/nu^2)`` (the softmax minus the
    step is odd in the score gap, so the first order cancels against a smooth density).

    Doubling ``nu`` from 50 to 100 must divide the largest difference by 4 (within 10%: the
    next order is ``O(1/nu^4)``, relative ``1/nu^2``; the two routes' quadrature errors,
    about 1e-9, are far below the differences, about 1e-4 and 2e-5); at ``nu = 50`` the
    difference is below 1e-3.
    """
    omega, V = np.array([0.4, -0.3, 0.9, 0.0]), 0.5
    argmax = np.exp(_log_posterior(math.inf, omega, V))[:3]
    gaps = {
        nu: np.max(np.abs(np.exp(_log_posterior(nu, omega, V))[:3] - argmax))
        for nu in (50.0, 100.0)
    }
    assert gaps[50.0] < 1e-3
    assert gaps[50.0] / gaps[100.0] == pytest.approx(4.0, rel=0.1)


def test_location_posterior_is_finite_and_differentiable_at_extreme_scores():
    """``nu = 10``, ``|omega| = 5``: scores of 50 in the exponent, no overflow.

    The log posterior is finite (even for a token 100 below the best), sums to one, and its
    ``jax.grad`` agrees with central finite differences to 1e-6 (step 1e-5: truncation
    ``h^2 nu^3 ~ 1e-7``, rounding about 1e-11; the interpolant is continuously differentiable).
    """
    omega, V, weights = jnp.array([5.0, -5.0, 4.5, 0.0]), 0.3, jnp.array([0.2, 1.0, -0.7, 0.0])
    config = MAX_NU2.replace(nu=10.0)

    @jax.jit
    def objective(w: jax.Array) -> jax.Array:
        return jnp.sum(jnp.where(MASK, weights * location_log_posterior(config, w, V, MASK), 0.0))

    log_post = _log_posterior(10.0, omega, V)
    assert np.all(np.isfinite(log_post[:3]))
    assert abs(np.exp(log_post[:3]).sum() - 1.0) < 1e-8
    gradient = np.asarray(jax.grad(objective)(omega))
    step = 1e-5
    finite_diff = [
        (objective(omega.at[i].add(step)) - objective(omega.at[i].add(-step))) / (2 * step)
        for i in range(3)
    ]
    assert gradient[3] == 0.0
    assert np.allclose(gradient[:3], np.asarray(finite_diff), rtol=1e-6, atol=1e-6)


def test_finite_nu_beyond_the_supported_range_is_a_config_error():
    """Refused where the options are checked (the state evolution below trusts its task)."""
    with pytest.raises(ConfigError, match="nu <= "):
        bayes_slr.theory(variant="max", nu=10 * MAX_FINITE_NU, bayes=True, progress=False)


@pytest.fixture(scope="module")
def max_nu2_curve(full_size) -> dict[tuple[float, str], object]:
    # the tests read the fixed point and its per-draw diagnostics, not the batches' spread:
    # two batches (the fewest), each solved from the point, halve the fixture's time
    common = dict(mc_samples=8192 if full_size else 1024, replicates=2)
    points = {
        (alpha, "random"): bayes_replica_point(MAX_NU2, alpha=alpha, **common)
        for alpha in (1e-3, 1.0, 64.0, 256.0)
    }
    points[1.0, "informed"] = bayes_replica_point(MAX_NU2, alpha=1.0, init="informed", **common)
    return points


@pytest.mark.slow
def test_max_finite_nu_curve_limits(max_nu2_curve):
    """max-SLR, nu = 2, L = 3: error decreasing in alpha, prior-predictive error 1 at alpha -> 0,
    and the population Bayes error (docs/model.md section 2) approached from above like 1/alpha.

    The errors come by quadrature at the fixed point, so only the fixed point carries Monte
    Carlo error (a few % of the O(1/alpha) excess). From alpha = 64 to 256 the excess must
    shrink by more than half (asymptotically by 4) and stay above minus the quadrature bound.
    """
    curve = [max_nu2_curve[a, "random"] for a in (1e-3, 1.0, 64.0, 256.0)]
    assert all(p.converged for p in max_nu2_curve.values())
    errors = [p.test_error for p in curve]
    assert all(b < a for a, b in zip(errors, errors[1:]))
    assert 0.99 < errors[0] <= 1.0
    population = bayes_error_exact(MAX_NU2)
    excess_64, excess_256 = (p.test_error - population.value for p in curve[2:])
    assert excess_256 >= -population.error_bound - 1e-7
    assert excess_256 < 0.5 * excess_64


@pytest.mark.slow
def test_max_finite_nu_nishimori_and_monte_carlo_error(max_nu2_curve):
    """Nishimori ``E[yhat^2] = E[y yhat]`` within 4 standard errors; the quadrature error
    ``1 - q_v A_softmax(nu q_k, nu^2)`` and the Monte Carlo mean of ``(y - yhat)^2`` agree
    within 4 standard errors of the latter (same overlaps, same estimator)."""
    for point in max_nu2_curve.values():
        d = point.diagnostics
        assert abs(d.nishimori_gap) < 4 * d.nishimori_gap_stderr + 1e-12
        assert abs(d.monte_carlo_error - point.test_error) < 4 * d.monte_carlo_stderr
        assert (
            d.posterior_mean_f_error == point.test_error
        )  # max-SLR: tokens carry no information on k*


@pytest.mark.slow
def test_max_finite_nu_informed_and_uninformed_starts_agree(max_nu2_curve):
    """At L = 3, alpha = 1 both starts reach the same fixed point (no hard phase), to the
    iteration's tolerance (1e-9 relative residual, damping 0.5: q within ~1e-8)."""
    informed, uninformed = max_nu2_curve[1.0, "informed"], max_nu2_curve[1.0, "random"]
    for name in ("q_k", "q_v"):
        assert informed.overlaps[name] == pytest.approx(uninformed.overlaps[name], abs=1e-6)

"""Owen's T and the erf second moment against SciPy (independent implementations)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, special, stats

from bayes_slr.numerics.special import erf_gaussian_second_moment, owens_t


def test_owens_t_matches_scipy() -> None:
    """SciPy's ``owens_t`` (Patefield-Tandy) against the 48-node Gauss-Legendre rule: both are
    accurate to rounding, so 1e-15 absolute (the values are below 1/4)."""
    rng = np.random.default_rng(0)
    h = np.concatenate([rng.normal(0.0, 3.0, 200), [0.0, 1e-8, 6.0, 12.0, -40.0]])
    a = np.concatenate([rng.uniform(-1.0, 1.0, 200), [1.0, 1.0, 0.999, 1.0, 0.5]])
    np.testing.assert_allclose(np.asarray(owens_t(h, a)), special.owens_t(h, a), rtol=0, atol=1e-15)


@pytest.mark.parametrize("mu, sigma", [(0.0, 0.5), (1.3, 0.2), (-2.0, 1.5), (0.4, 3.0), (5.0, 0.1)])
def test_erf_second_moment_matches_quadrature(mu: float, sigma: float) -> None:
    """``E[erf(mu + sigma Z)^2]`` by SciPy's adaptive quadrature (tolerance 1e-13)."""
    expected, _ = integrate.quad(
        lambda z: special.erf(mu + sigma * z) ** 2 * stats.norm.pdf(z),
        -14.0,
        14.0,
        points=[-mu / sigma],
        epsabs=1e-14,
        limit=200,
    )
    assert float(erf_gaussian_second_moment(mu, sigma)) == pytest.approx(expected, abs=1e-13)


def test_erf_second_moment_at_zero_mean_is_the_arcsine_law() -> None:
    """``E[erf(sigma Z)^2] = (2/pi) arcsin(2 sigma^2 / (1 + 2 sigma^2))`` (a classical form)."""
    sigma = np.array([0.1, 0.5, 1.0, 3.0])
    expected = 2.0 / np.pi * np.arcsin(2.0 * sigma**2 / (1.0 + 2.0 * sigma**2))
    np.testing.assert_allclose(
        np.asarray(erf_gaussian_second_moment(0.0, sigma)), expected, rtol=0, atol=1e-15
    )

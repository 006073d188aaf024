"""The predecessor's erf predictor on the sphere and its closed-form population risk.

Marion, Berthier, Biau, Boyer (ICLR 2025) train ``T(X) = sum_l erf(lambda x_l.k) x_l.v`` with unit
``k``, ``v`` on data where the relevant token (the first) is ``N(sqrt(D/2) k*, gamma^2 I)``, the
others ``N(0, I)``, and ``y = x_1.v* + eps xi``; their code gives the excess risk in closed form as
a function of ``kappa = k.k*``, ``nu = v.v*``, the cross overlaps ``theta = v.k*``, ``eta = k.v*``,
``rho = k.v`` and ``(lambda, gamma, D, L)``, with
``zeta(t, g) = 1 + int_-inf^t zeta'(s, g) ds`` (an adaptive quadrature of a closed-form
derivative). Their formula is transcribed below (facts carry over, code does not).

Independent routes: (1) the toolkit's population error of the ``erf_sphere`` activation on the
spiked variant with ``nu = D/2`` (their law when ``gamma = 1``: ``chi*_loc ~ N(sqrt(D/2), 1)``,
``q_k = q_v = 1`` is their unit sphere), whose second moment is Owen's T in closed form, against
their ``zeta`` by SciPy quadrature: agreement to 1e-10 (both are accurate to ~1e-14); (2) the
toolkit's element-wise integrals at their ``gamma^2 = 1/2`` (the relevant token's own variance is
not a variant of the toolkit, docs/dynamics.md); (3) Monte Carlo of their data law, within four
standard errors.
"""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest
from scipy import integrate, special

from bayes_slr import ConfigError, LengthLaw, SLRConfig
from bayes_slr.attention.activations import (
    register_activation,
    sphere_erf,
    unregister_activation,
)
from bayes_slr.formulas import elementwise
from bayes_slr.formulas.population import population_error


def erf_prime(x: float) -> float:
    return 2.0 * math.exp(-(x**2)) / math.sqrt(math.pi)


def zeta(t: float, g: float) -> float:
    """Their ``zeta(t, g) = E[erf(t + g Z)^2]``, as the integral of its closed-form derivative."""

    def derivative(s: float) -> float:
        return (
            2.0
            / math.sqrt(1.0 + 2.0 * g**2)
            * special.erf(s / math.sqrt((1.0 + 4.0 * g**2) * (1.0 + 2.0 * g**2)))
            * erf_prime(s / math.sqrt(1.0 + 2.0 * g**2))
        )

    # the derivative is below 1e-300 beyond 27 of its widths sqrt(1 + 2 g^2)
    lower = -27.0 * math.sqrt(1.0 + 2.0 * g**2)
    value, _ = integrate.quad(derivative, lower, t, points=[0.0] if t > 0 else None, epsabs=1e-13)
    return 1.0 + value


def predecessor_risk(kappa, nu, theta, eta, rho, lam, gamma, d, L) -> float:
    """Their closed-form excess risk ``R + (L - 1) zeta(0, lambda)``, all five overlaps."""
    s2 = 1.0 + 2.0 * lam**2 * gamma**2
    s4 = 1.0 + 4.0 * lam**2 * gamma**2
    arg = lam * math.sqrt(d / (2.0 * s2)) * kappa
    C = 2.0 * lam / math.sqrt(math.pi * (1.0 + 2.0 * lam**2))
    erf_second = -4.0 * arg * math.exp(-(arg**2)) / math.sqrt(math.pi)
    risk = (
        gamma**2
        - 2.0
        * (
            gamma**2 * nu * special.erf(arg)
            + lam * gamma**2 * math.sqrt(d / 2) * eta * theta / math.sqrt(s2) * erf_prime(arg)
            + lam**2 * gamma**4 * eta * rho / s2 * erf_second
        )
        + (d / 2 * theta**2 + gamma**2) * zeta(lam * math.sqrt(d / 2) * kappa, lam * gamma)
        + 4.0
        * lam
        * gamma**2
        * math.sqrt(d / 2)
        * (theta * rho - lam**2 * gamma**2 * rho**2 * kappa / s2)
        / math.sqrt(s2)
        * special.erf(arg / math.sqrt(s4))
        * erf_prime(arg)
        + 4.0
        / math.sqrt(math.pi)
        * lam**2
        * gamma**4
        * rho**2
        / (s2 * math.sqrt(s4))
        * erf_prime(-lam * math.sqrt(d) * kappa / math.sqrt(s4))
        + (L - 1) * 8.0 / math.pi * lam**2 / math.sqrt(1 + 4 * lam**2) / (1 + 2 * lam**2) * rho**2
        + 4.0 * lam**2 * (L - 1) * (L - 2) / (math.pi * (1.0 + 2.0 * lam**2)) * rho**2
        - 2.0
        * (L - 1)
        * C
        * rho
        * (
            -math.sqrt(d / 2) * theta * special.erf(arg)
            - lam * gamma**2 * rho / math.sqrt(s2) * erf_prime(arg)
        )
    )
    return risk + (L - 1) * zeta(0.0, lam)


POINTS = [
    # kappa, nu, lambda, L, D
    (0.1, 0.3, 1.0, 3, 100),
    (0.05, -0.2, 0.5, 10, 400),
    (0.3, 0.9, 2.0, 2, 50),
    (0.0, 0.0, 0.1, 3, 400),
]


@pytest.fixture
def erf_sphere_names():
    """Register the ``erf_sphere`` records the theory is asked about, and remove them after."""
    names = []

    def register(lam: float) -> str:
        names.append(register_activation(sphere_erf(lam)).name)
        return names[-1]

    yield register
    for name in names:
        unregister_activation(name)


@pytest.mark.parametrize("kappa, nu, lam, L, D", POINTS)
def test_closed_form_equals_population_error_of_the_spiked_variant(
    kappa, nu, lam, L, D, erf_sphere_names
) -> None:
    """``gamma = 1``: their law is spiked SLR with ``nu = D/2``; the toolkit's population error at
    ``m_k = kappa``, ``q_k = 1``, ``m_v = nu``, ``q_v = 1`` (cross overlaps 0) is their risk."""
    config = SLRConfig("spiked", D, LengthLaw.fixed(L), D / 2)
    ours = population_error(erf_sphere_names(lam), config, kappa, 1.0, nu, 1.0)
    assert ours == pytest.approx(predecessor_risk(kappa, nu, 0, 0, 0, lam, 1.0, D, L), abs=1e-10)


@pytest.mark.parametrize("kappa, nu, lam, L, D", POINTS)
def test_closed_form_from_the_elementwise_integrals_at_their_gamma(
    kappa, nu, lam, L, D, erf_sphere_names
) -> None:
    """``gamma^2 = 1/2`` (their experiments): the relevant token's score is
    ``N(sqrt(D/2) kappa, gamma^2)`` and ``y`` has variance ``gamma^2``, so the risk is
    ``gamma^2 (1 - 2 nu E[s] + E[s^2]) + (L - 1) E[s(Z)^2]`` from the toolkit's Gaussian moments."""
    name, gamma = erf_sphere_names(lam), math.sqrt(0.5)
    mu = math.sqrt(D / 2) * kappa
    first = float(elementwise.mean_score(name, mu, gamma**2, 0.0))
    located = elementwise.second_moment(name, mu, gamma, 0.0)[0]
    other = elementwise.second_moment(name, 0.0, 1.0, 0.0)[0]
    ours = gamma**2 * (1.0 - 2.0 * nu * first + located) + (L - 1) * other
    expected = predecessor_risk(kappa, nu, 0, 0, 0, lam, gamma, D, L)
    assert ours == pytest.approx(expected, abs=1e-10)


@pytest.mark.parametrize("gamma", [1.0, math.sqrt(0.5)])
def test_closed_form_matches_monte_carlo_of_their_data_law(gamma: float, full_size: bool) -> None:
    """Their sequences simulated directly (unit ``k*, v*, k, v`` on the manifold), the excess risk
    by Monte Carlo within four standard errors of the closed form."""
    kappa, nu, lam, L, D = 0.25, 0.6, 1.0, 3, 24
    n = 400_000 if full_size else 60_000
    basis = np.eye(D)
    k_star, v_star = basis[0], basis[1]
    k = kappa * k_star + math.sqrt(1 - kappa**2) * basis[2]
    v = nu * v_star + math.sqrt(1 - nu**2) * basis[3]
    rng = np.random.default_rng(7)
    X = rng.standard_normal((n, L, D))
    X[:, 0] = math.sqrt(D / 2) * k_star + gamma * X[:, 0]
    y = X[:, 0] @ v_star  # the label noise cancels in the excess risk
    T = np.sum(special.erf(lam * X @ k) * (X @ v), axis=1)
    losses = (T - y) ** 2
    expected = predecessor_risk(kappa, nu, 0, 0, 0, lam, gamma, D, L)
    assert abs(losses.mean() - expected) <= 4.0 * losses.std(ddof=1) / math.sqrt(n)


def test_sphere_erf_record() -> None:
    """The record is odd, without offset, named by its inverse temperature; ``lambda <= 0`` is
    refused."""
    record = sphere_erf(0.5)
    chi = jax.numpy.linspace(-2.0, 2.0, 5)
    np.testing.assert_allclose(record.weights(chi), -record.weights(-chi), atol=0)
    assert record.name == "erf_sphere_0.5" and not record.has_offset and record.has_theory
    with pytest.raises(ConfigError, match="inverse_temperature"):
        sphere_erf(0.0)

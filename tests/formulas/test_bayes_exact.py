"""The exact population Bayes error against independent routes (docs/model.md section 2).

Tolerances: Monte Carlo comparisons allow 4 standard errors plus the stated
quadrature bound; quadrature-vs-quadrature comparisons allow the stated bounds
(the claim under test) plus 1e-12 for SciPy's adaptive rule.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, special

from bayes_slr import LengthLaw, SLRConfig
from bayes_slr.formulas import normalised
from bayes_slr.formulas.bayes import bayes_error_exact
from bayes_slr.formulas.population import location_mean, terms_with_bounds


def config(variant: str, L: int | LengthLaw, nu: float) -> SLRConfig:
    length = L if isinstance(L, LengthLaw) else LengthLaw.fixed(L)
    return SLRConfig(variant, 16, length, nu)


def monte_carlo_bayes(cfg: SLRConfig, samples: int, seed: int) -> tuple[float, float]:
    """``1 - mean(sum p^2)`` and its standard error, drawing ``chi*`` and ``L`` with NumPy."""
    rng = np.random.default_rng(seed)
    probs = np.asarray(cfg.length.probs)
    lengths = rng.choice(cfg.Lbar, size=samples, p=probs) + 1
    chi = rng.standard_normal((samples, cfg.Lbar))
    mask = np.arange(cfg.Lbar) < lengths[:, None]
    if cfg.variant == "spiked":
        location = (rng.random(samples) * lengths).astype(int)
        chi[np.arange(samples), location] += math.sqrt(cfg.nu)
    logits = np.where(mask, cfg.c_nu * chi, -np.inf)
    p = special.softmax(logits, axis=1)
    values = 1.0 - (p**2).sum(axis=1)
    return float(values.mean()), float(values.std(ddof=1) / math.sqrt(samples))


@pytest.mark.parametrize(
    "cfg",
    [
        config("spiked", 3, 1.0),
        config("spiked", 10, 4.0),
        config("max", 4, 2.0),
        config("spiked", LengthLaw.uniform(5), 2.0),
        config("max", LengthLaw((0.3, 0.0, 0.7)), 1.0),
    ],
    ids=lambda c: f"{c.variant}-{c.length.describe()}-nu{c.nu:g}",
)
def test_exact_matches_monte_carlo(cfg: SLRConfig) -> None:
    exact = bayes_error_exact(cfg)
    mean, stderr = monte_carlo_bayes(cfg, 200_000, seed=7)
    assert exact.error_bound <= 1e-7
    assert abs(exact.value - mean) <= 4.0 * stderr + exact.error_bound


@pytest.mark.parametrize("variant", ["spiked", "max"])
@pytest.mark.parametrize("nu", [0.5, 3.0])
def test_two_tokens_match_scipy_quadrature(variant: str, nu: float) -> None:
    """``L = 2``: ``sum p^2 = p^2 + (1 - p)^2`` with ``p = sigmoid(c_nu (chi1 - chi2))``, one 1-D
    integral.
    """
    cfg = config(variant, 2, nu)
    c = cfg.c_nu
    # chi1 - chi2 ~ N(mean, 2) with mean sqrt(nu) (spiked, location first; symmetric in the order)
    # or 0 (max)
    mean = math.sqrt(nu) if variant == "spiked" else 0.0

    def integrand(d: float) -> float:
        p = special.expit(c * d)
        return (
            (p**2 + (1.0 - p) ** 2) * math.exp(-((d - mean) ** 2) / 4.0) / math.sqrt(4.0 * math.pi)
        )

    reference, abserr = integrate.quad(integrand, -np.inf, np.inf, epsabs=1e-13, epsrel=1e-13)
    exact = bayes_error_exact(cfg)
    assert abserr < 1e-11
    assert abs(exact.value - (1.0 - reference)) <= exact.error_bound + 1e-12


@pytest.mark.parametrize(
    "cfg",
    [
        config("spiked", 1000, 2.0),
        config("max", 50, 5.0),
        config("spiked", LengthLaw.uniform(30), 9.0),
    ],
    ids=lambda c: f"{c.variant}-{c.length.describe()}-nu{c.nu:g}",
)
def test_error_bound_holds_against_a_finer_rule(cfg: SLRConfig) -> None:
    """A rule three times finer (error ~1e-30 by the trapezoid estimate) stays within the stated
    bound.
    """
    exact = bayes_error_exact(cfg)
    lengths, probs = zip(*cfg.length.support())
    finer = normalised.independent_terms(
        "softmax",
        location_mean(cfg, cfg.c_nu),
        cfg.c_nu,
        np.asarray(probs),
        np.asarray(lengths, float),
        step=0.08,
    )
    assert exact.error_bound <= 1e-7
    assert abs(exact.value - (1.0 - finer[0, 1])) <= exact.error_bound


@pytest.mark.parametrize(
    "cfg",
    [config("spiked", 5, 2.0), config("max", 5, 1.5), config("spiked", LengthLaw.uniform(6), 1.0)],
    ids=lambda c: f"{c.variant}-{c.length.describe()}-nu{c.nu:g}",
)
def test_nishimori_identity_by_two_integrals(cfg: SLRConfig) -> None:
    """``E[p_eps] = E[sum p^2]``: the ``A`` integral (location tilt; two normalisers for max) equals
    ``B``.
    """
    terms = terms_with_bounds("softmax", cfg, cfg.c_nu, 0.0, 0.0)
    assert abs(terms.A - terms.B) <= terms.A_bound + terms.B_bound
    assert abs(terms.A - terms.B) < 1e-7


@pytest.mark.parametrize("variant", ["spiked", "max"])
def test_single_token_has_zero_bayes_error(variant: str) -> None:
    exact = bayes_error_exact(config(variant, 1, 2.0))
    assert abs(exact.value) <= exact.error_bound


@pytest.mark.parametrize(
    "length", [LengthLaw.fixed(5), LengthLaw.uniform(6), LengthLaw((0.5, 0.0, 0.0, 0.5))]
)
@pytest.mark.parametrize("variant", ["spiked", "max"])
def test_no_signal_gives_one_minus_mean_inverse_length(variant: str, length: LengthLaw) -> None:
    exact = bayes_error_exact(SLRConfig(variant, 16, length, 0.0))
    expected = 1.0 - sum(p / L for L, p in length.support())
    assert abs(exact.value - expected) <= exact.error_bound


@pytest.mark.parametrize("variant", ["spiked", "max"])
def test_monotone_in_nu_and_in_length(variant: str) -> None:
    by_nu = [bayes_error_exact(config(variant, 5, nu)) for nu in (0.0, 0.5, 1.0, 2.0, 4.0, 8.0)]
    by_length = [bayes_error_exact(config(variant, L, 2.0)) for L in (1, 2, 3, 10, 100, 1000)]
    for smaller, larger in zip(by_nu[1:], by_nu[:-1]):
        assert larger.value - smaller.value > larger.error_bound + smaller.error_bound
    for smaller, larger in zip(by_length[:-1], by_length[1:]):
        assert larger.value - smaller.value > larger.error_bound + smaller.error_bound


def test_max_with_infinite_nu_is_zero() -> None:
    assert bayes_error_exact(config("max", 100, math.inf)) == (0.0, 0.0)


@pytest.mark.parametrize("variant", ["spiked", "max"])
def test_very_long_sequences(variant: str) -> None:
    exact = bayes_error_exact(config(variant, 100_000, 4.0))
    assert math.isfinite(exact.value) and 0.0 <= exact.value <= 1.0
    assert exact.error_bound <= 1e-7
    # More tokens can only hide the location further: below the L = 1e5 value at L = 1e4.
    shorter = bayes_error_exact(config(variant, 10_000, 4.0))
    assert exact.value > shorter.value + exact.error_bound + shorter.error_bound


@pytest.mark.parametrize("variant", ["spiked", "max"])
def test_variable_length_is_the_weighted_average(variant: str) -> None:
    law = LengthLaw((0.2, 0.0, 0.5, 0.0, 0.0, 0.0, 0.3))
    mixed = bayes_error_exact(SLRConfig(variant, 16, law, 1.5))
    parts = [(p, bayes_error_exact(config(variant, L, 1.5))) for L, p in law.support()]
    average = sum(p * part.value for p, part in parts)
    assert abs(mixed.value - average) <= mixed.error_bound + sum(
        p * part.error_bound for p, part in parts
    )

"""Variable sequence length in the replica theory (docs/theory.md; padded tokens are masked out).

Spiked SLR, ``nu = 2``, length uniform on ``{1..4}``. References that do not go through the
state evolution: the population Bayes error (``bayes_error_exact``, quadrature over the
length law), the population optimum of softmax attention (``optimal_population_error``),
the fixed-length theory, and an exact consequence of the ``L = 1`` sequences at ``Delta = 0``.
"""

from __future__ import annotations

import math

import pytest

from bayes_slr.formulas.bayes import bayes_error_exact
from bayes_slr.formulas.optimum import optimal_population_error
from bayes_slr.formulas.replica_bayes import bayes_replica_point
from bayes_slr.formulas.replica_erm import erm_replica_point
from bayes_slr.formulas.result import TheoryPoint
from bayes_slr.models.spec import LengthLaw, SLRConfig

UNIFORM = SLRConfig("spiked", 1, LengthLaw.uniform(4), 2.0, 0.1)
NOISELESS = UNIFORM.replace(Delta=0.0)
SAMPLES = 4096


@pytest.fixture(scope="module")
def bayes_curve() -> dict[float, TheoryPoint]:
    """Bayes-optimal state evolution at U{1..4}, Delta = 0.1, from alpha ~ 0 to alpha = 256."""
    return {
        alpha: bayes_replica_point(UNIFORM, alpha=alpha, mc_samples=SAMPLES)
        for alpha in (1e-3, 1.0, 16.0, 64.0, 256.0)
    }


def test_bayes_tends_to_population_bayes_error_like_one_over_alpha(bayes_curve):
    """alpha -> inf: the error decreases to ``bayes_error_exact`` (averaged over the length law)
    from above.

    ``1 - q = O(1/alpha)`` and the excess is linear in ``1 - q``: from alpha = 64 to 256 it
    must shrink by 4 up to O(1/alpha) corrections (a few percent at alpha = 64) and the
    relative Monte Carlo error of ``1 - q`` (about ``1/sqrt(SAMPLES)``, 1.6%): within
    [3.5, 4.5]. alpha -> 0 gives the prior-predictive error 1.
    """
    population = bayes_error_exact(UNIFORM)
    assert all(p.converged for p in bayes_curve.values())
    errors = [bayes_curve[a].test_error for a in sorted(bayes_curve)]
    assert all(b < a for a, b in zip(errors, errors[1:]))
    assert 0.99 < errors[0] <= 1.0
    excess = {a: p.test_error - population.value for a, p in bayes_curve.items()}
    assert excess[256.0] > population.error_bound
    assert 3.5 < excess[64.0] / excess[256.0] < 4.5


def test_bayes_nishimori_identity_and_monte_carlo_error(bayes_curve):
    """Nishimori ``E[yhat^2] = E[y yhat]`` within 4 standard errors at every alpha.

    The Monte Carlo and quadrature evaluations of the error agree within 4 standard errors
    of the Nishimori statistic plus 4/sqrt(SAMPLES) (the per-draw standard deviation of the
    error is about 1.2, measured over 8 seeds: together about 5 standard errors). The
    training-set posterior mean of f is not better than E[y | X, data] (up to its inner
    Monte Carlo error, 1e-3).
    """
    for point in bayes_curve.values():
        d = point.diagnostics
        assert abs(d.nishimori_gap) < 4 * d.nishimori_gap_stderr + 1e-12
        tolerance = 4 * d.nishimori_gap_stderr + 4 / math.sqrt(SAMPLES)
        assert abs(d.monte_carlo_error - point.test_error) < tolerance
        assert d.posterior_mean_f_error >= point.test_error - 1e-3


@pytest.mark.parametrize(("alpha", "init"), [(8.0, "random"), (32.0, "informed")])
def test_noiseless_length_one_sequences_pin_down_v(alpha, init):
    """Delta = 0: the ``L = 1`` sequences (probability 1/4) are noiseless linear observations of
    ``v*``; for ``alpha / 4 > 1`` they determine it, so ``q_v = 1`` (up to the ceiling 1 - 1e-12)
    from any start. Then ``y`` names the location exactly, the key channel is that of known
    locations, ``qhat_k = alpha nu``, and ``q_k = alpha nu / (1 + alpha nu)`` exactly (no Monte
    Carlo error). The iteration stops at a relative residual ``r <= 1e-9`` (damping 0.5), within
    ``K r`` of its fixed point, ``K = d / (1 - rho)`` about 2 as measured on the golden theory
    rows (tests/experiments/test_golden.py): 1e-8 covers it wherever the stop lands.
    """
    point = bayes_replica_point(NOISELESS, alpha=alpha, mc_samples=1024, init=init)
    assert point.converged
    assert point.overlaps["q_v"] > 1 - 1e-8
    expected = alpha * NOISELESS.nu / (1 + alpha * NOISELESS.nu)
    assert abs(point.overlaps["q_k"] - expected) < 1e-8


def test_padded_token_is_inert():
    """A law on {1..4} with P(L = 3) = 1 - 1e-6 pads (almost) every sequence of length 3 with a
    masked fourth token: the solution must be the fixed-length L = 3 one, up to Monte Carlo
    error (the draws differ). Tolerances: 4 sqrt(2) seed-to-seed standard deviations at 4096
    draws (measured over 8 seeds: 0.0013 for the error, 0.0007 for q_k, 0.0019 for q_v).
    Counting the padded token would give the L = 4 solution, 0.09 higher in error.
    """
    padded = UNIFORM.replace(length=LengthLaw((0.0, 0.0, 1.0 - 1e-6, 1e-6)))
    fixed = UNIFORM.replace(length=LengthLaw.fixed(3))
    a, b = (bayes_replica_point(c, alpha=4.0, mc_samples=SAMPLES) for c in (padded, fixed))
    assert a.converged and b.converged
    assert abs(a.test_error - b.test_error) < 0.0075
    assert abs(a.overlaps["q_k"] - b.overlaps["q_k"]) < 0.004
    assert abs(a.overlaps["q_v"] - b.overlaps["q_v"]) < 0.011


@pytest.mark.slow
def test_erm_softmax_tends_to_population_optimum(full_size):
    """Softmax ERM, lam = 0.01, Delta = 0: alpha = 256 (full size: 64 and 256, 4096 draws).

    For spiked SLR the softmax optimum with one ``(k, v)`` serving every length is the Bayes
    error (``optimal_population_error`` and ``bayes_error_exact`` compute it independently).
    ERM cannot beat the Bayes-optimal estimator at the same alpha, so its excess lies above
    the Bayes excess (0.0003 at alpha = 256, on 1024 draws as the noiseless test's points: their
    programs; its Monte Carlo error, a few percent of it, is far below the margin to the ERM
    excess, 0.006); it is O(1/alpha): at 4096 Monte Carlo draws alpha * excess = 1.48, 1.46,
    1.50 at alpha = 64, 128, 256 (1.8 at 256 with 1024 draws), and the bound is 5 / alpha. The
    Sobol channel in scramblings of 1024 points: the pooled point is on all ``mc`` of them
    whatever their number, and each replicate's first-order step from it stays in the physical
    region (in 8 scramblings of 512 at alpha = 256, 4 of them left it and took 76 to 445 damped
    iterations of their own, two thirds of the test's time). Full size: from 64 to 256 the
    excess must shrink by more than half (4 expected). At 1024 draws alpha = 64 is not usable
    (the draws give an RS-unstable point, replicon 1.01).
    """
    optimum = optimal_population_error("softmax", NOISELESS).error
    assert optimum == pytest.approx(bayes_error_exact(NOISELESS).value, abs=1e-6)
    alphas, mc = ((64.0, 256.0), 8192) if full_size else ((256.0,), 4096)
    excess = {}
    for alpha in alphas:
        point = erm_replica_point(
            NOISELESS, "softmax", alpha=alpha, lam=0.01, mc_samples=mc, replicates=mc // 1024
        )
        bayes = bayes_replica_point(NOISELESS, alpha=alpha, mc_samples=1024)
        assert point.converged and point.diagnostics.rs_stable
        excess[alpha] = point.test_error - optimum
        assert bayes.test_error - optimum < excess[alpha] < 5 / alpha
    if full_size:
        assert excess[256.0] < 0.5 * excess[64.0]

"""Checks of the Bayes replica-symmetric point (bayes_slr.formulas.replica_bayes) against
independent routes: the population Bayes error, Nishimori's identity, both starts.
"""

from __future__ import annotations

import math

import pytest

from bayes_slr.formulas.bayes import bayes_error_exact
from bayes_slr.formulas.replica_bayes import bayes_replica_point
from bayes_slr.models.spec import LengthLaw, SLRConfig

SPIKED = SLRConfig("spiked", 1, LengthLaw.fixed(3), 2.0)
MAX_INF = SLRConfig("max", 1, LengthLaw.fixed(3), math.inf)
SAMPLES = 2048


@pytest.fixture(scope="module")
def spiked_bayes_curve() -> dict[float, object]:
    return {
        alpha: bayes_replica_point(SPIKED, alpha=alpha, mc_samples=SAMPLES)
        for alpha in (1e-3, 1.0, 16.0, 64.0, 256.0)
    }


def test_bayes_spiked_tends_to_population_bayes_error_from_above(spiked_bayes_curve):
    """alpha -> inf: the known-direction Bayes error (docs/model.md section 2) is a lower bound and
    the limit.

    The excess over it is O(1/alpha) (q -> 1 like 1 - O(1/alpha)): from alpha = 64 to 256
    it must shrink by well over half (asymptotically by 4), and stay >= 0 up to the
    quadrature bound of the population value.
    """
    population = bayes_error_exact(SPIKED)
    excess = {a: p.test_error - population.value for a, p in spiked_bayes_curve.items()}
    assert all(p.converged for p in spiked_bayes_curve.values())
    assert excess[256.0] >= -population.error_bound - 1e-7
    assert 0 <= excess[256.0] < 0.5 * excess[64.0]


def test_bayes_spiked_decreases_with_alpha_and_starts_at_one(spiked_bayes_curve):
    """More data never hurts the Bayes-optimal estimator; alpha -> 0 gives the prior-predictive
    error 1.
    """
    errors = [spiked_bayes_curve[a].test_error for a in sorted(spiked_bayes_curve)]
    assert all(b < a for a, b in zip(errors, errors[1:]))
    assert 0.99 < errors[0] <= 1.0


def test_bayes_nishimori_identity_and_posterior_mean_excess(spiked_bayes_curve):
    """E[yhat^2] = E[y yhat] for yhat = E[y | X, data], to Monte Carlo precision (4 standard
    errors).

    The training-set posterior mean of f (docs/model.md section 5) cannot beat E[y | X, data]:
    its excess is a mean square (up to the inner Monte Carlo error, 1e-3 here).
    """
    for point in spiked_bayes_curve.values():
        d = point.diagnostics
        assert abs(d.nishimori_gap) < 4 * d.nishimori_gap_stderr + 1e-12
        assert d.posterior_mean_f_error >= point.test_error - 1e-3
        # quadrature (docs/model.md section 4) and Monte Carlo evaluations of the same error agree
        assert abs(d.monte_carlo_error - point.test_error) < 4 * d.nishimori_gap_stderr + 4 / (
            math.sqrt(SAMPLES)
        )
        # the error's standard error is the batches' spread (the overlaps are Monte Carlo):
        # tests/formulas/test_bayes_stderr.py checks it against the spread over seeds
        assert d.replicates == 8 and d.test_error_stderr >= 0.0


@pytest.mark.slow
def test_bayes_max_inf_tends_to_zero_and_both_starts_agree():
    """max-SLR, nu = inf: the population Bayes error is 0 and is reached like 1/alpha.

    At L = 3 the informed and uninformed starts reach the same fixed point (no hard phase).
    """
    points = {
        alpha: bayes_replica_point(MAX_INF, alpha=alpha, mc_samples=512) for alpha in (4.0, 64.0)
    }
    informed = bayes_replica_point(MAX_INF, alpha=4.0, mc_samples=512, init="informed")
    assert bayes_error_exact(MAX_INF).value == 0.0
    assert all(p.converged for p in points.values())
    assert abs(informed.overlaps["q_k"] - points[4.0].overlaps["q_k"]) < 1e-6
    for p in points.values():
        assert abs(p.diagnostics.nishimori_gap) < 4 * p.diagnostics.nishimori_gap_stderr
    assert 0 < points[64.0].overlaps["q_k"] - points[4.0].overlaps["q_k"]
    small, large = points[4.0], points[64.0]
    assert large.test_error + 4 * large.diagnostics.test_error_stderr < small.test_error / 4
    assert large.test_error > -4 * large.diagnostics.test_error_stderr


def test_bayes_noiseless_spiked_has_a_hard_phase_just_above_alpha_one():
    """Spiked ``nu = 2``, ``L = 3``, ``Delta = 0`` (docs/theory.md part C): exact recovery of ``v``
    (``q_v = 1``)
    is a fixed point once ``alpha > 1`` (with ``q_v = 1 - eps`` the value channel gives
    ``qhat_v ~ alpha / eps``, so ``eps -> eps / alpha``), but from the random start the state
    evolution
    only reaches it above an algorithmic threshold (between 1.2 and 1.25 at 16384 draws). At
    ``alpha = 1.1`` the two starts end at different fixed points, the informed one at ``q_v = 1``
    (the cap)
    with a lower error; at ``alpha = 2`` they agree. Margins: ``q_v`` of the random start 0.66, far
    from
    both 1 and the Monte Carlo error (0.005); ``1e-6`` is the cap's distance to 1 up to rounding."""
    config = SLRConfig("spiked", 1, LengthLaw.fixed(3), 2.0, 0.0)
    hard = {
        init: bayes_replica_point(config, alpha=1.1, init=init, mc_samples=4096, seed=0)
        for init in ("random", "informed")
    }
    assert all(point.converged for point in hard.values())
    assert hard["random"].overlaps["q_v"] < 0.9 and hard["informed"].overlaps["q_v"] > 1 - 1e-6
    assert hard["informed"].test_error < hard["random"].test_error - 0.1
    easy = {
        init: bayes_replica_point(config, alpha=2.0, init=init, mc_samples=4096, seed=0)
        for init in ("random", "informed")
    }
    assert abs(easy["random"].test_error - easy["informed"].test_error) < 1e-6
    assert easy["random"].overlaps["q_v"] > 1 - 1e-6

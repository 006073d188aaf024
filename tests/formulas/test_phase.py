"""The Bayes-optimal state evolution, its free entropy and its thresholds, against independent
routes: the Monte Carlo channel (with the error it propagates to the fixed point), the free
entropy's own derivatives (stationarity at the fixed points; the envelope identity ``d Phi* /
d alpha = psi``), the plain iteration of the map on either side of a located threshold, and the
closed forms at ``Delta = 0``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import bayes_slr
from bayes_slr.errors import ConfigError
from bayes_slr.formulas.bayes_channel import BayesChannel
from bayes_slr.formulas.free_entropy import free_entropy
from bayes_slr.formulas.phase import bayes_branches, bayes_error
from bayes_slr.formulas.replica_bayes import bayes_replica_point
from bayes_slr.formulas.state_evolution import state_evolution
from bayes_slr.formulas.thresholds import thresholds
from bayes_slr.models.spec import LengthLaw, SLRConfig

SPIKED = SLRConfig("spiked", 1, LengthLaw.fixed(3), 2.0, 0.1)
NOISELESS = SPIKED.replace(Delta=0.0)
SMALL_NOISE = SPIKED.replace(Delta=0.001)


@pytest.fixture(scope="module")
def channel() -> BayesChannel:
    return BayesChannel(SPIKED)


def test_quadrature_fixed_point_within_the_monte_carlo_error(channel):
    """The Monte Carlo channel's fixed point (16384 draws) sits within 4 of its propagated standard
    errors of the quadrature's, and so does the existing Monte Carlo solver's."""
    exact = state_evolution(SPIKED, 1.0, channel=channel)
    sampled_channel = BayesChannel(SPIKED, mc_samples=16384, seed=3, monte_carlo=True)
    sampled = state_evolution(SPIKED, 1.0, channel=sampled_channel)
    assert exact.converged and sampled.converged and exact.residual < 1e-10
    assert exact.q_stderr == (0.0, 0.0) and min(sampled.q_stderr) > 0
    assert np.all(np.abs(exact.q - sampled.q) < 4 * np.asarray(sampled.q_stderr))
    previous = bayes_replica_point(SPIKED, alpha=1.0, mc_samples=16384, seed=3)
    q_previous = np.array([previous.overlaps["q_k"], previous.overlaps["q_v"]])
    assert np.all(np.abs(exact.q - q_previous) < 4 * np.asarray(sampled.q_stderr))
    error, stderr = bayes_error(sampled_channel, sampled)
    assert abs(bayes_error(channel, exact)[0] - error) < 4 * stderr


def test_free_entropy_is_stationary_at_fixed_points_and_obeys_the_envelope_identity(channel):
    """``d Phi / d q = 0`` at a fixed point (central differences, step 1e-5: error ~1e-9), and
    ``d Phi* / d alpha = psi(q*)`` (step 1e-3: error ~1e-6 from the third derivative)."""
    alpha, step = 2.0, 1e-3
    point = state_evolution(SPIKED, alpha, channel=channel)
    for a in range(2):
        shift = 1e-5 * np.eye(2)[a]
        plus, minus = (free_entropy(channel, alpha, *(point.q + s)).value for s in (shift, -shift))
        assert abs(plus - minus) / 2e-5 < 1e-7
    optimum = {
        a: free_entropy(channel, a, *state_evolution(SPIKED, a, channel=channel).q).value
        for a in (alpha - step, alpha + step)
    }
    slope = (optimum[alpha + step] - optimum[alpha - step]) / (2 * step)
    assert slope == pytest.approx(channel.value(point.q).psi, abs=1e-6)


def test_noiseless_spiked_hard_phase_and_thresholds():
    """Spiked nu = 2, L = 3, Delta = 0 (the issue's setting): no weak-recovery threshold; exact
    recovery of v, the informed branch and alpha_IT all start at alpha = 1; AMP's branch ends at
    alpha_alg between 1.2 and 1.25 (the Monte Carlo state evolution's bracket). Checked against the
    plain iteration (Newton steps off) on either side of it."""
    found = thresholds(NOISELESS, 0.5, 4.0, tol=1e-5, scan=17)
    assert found.weak_recovery.status == "none"
    for record in (found.spinodal, found.information_theoretic, found.perfect_recovery):
        assert (record.status, record.value, record.tolerance) == ("exact", 1.0, 0.0)
    algorithmic = found.algorithmic
    assert algorithmic.status == "located" and 1.2 < algorithmic.value < 1.25
    assert algorithmic.tolerance < 1e-5
    below = state_evolution(NOISELESS, algorithmic.value - 0.01)
    above = state_evolution(NOISELESS, algorithmic.value + 0.01)
    assert below.converged and not below.perfect_recovery and below.q_v < 0.9
    assert above.perfect_recovery
    hard = bayes_branches(NOISELESS, 1.1)
    assert hard.hard_phase and hard.bayes_optimal == "informed" and hard.certain
    assert hard.informed.point.q_v == 1.0 and hard.informed.free_entropy.value == math.inf
    assert hard.informed.point.q_k == pytest.approx(
        2.2 / 3.2, rel=1e-12
    )  # alpha nu / (1 + alpha nu)
    assert hard.amp.test_error > hard.bayes.test_error + 0.1


def test_small_noise_information_theoretic_threshold_is_where_the_free_entropies_cross():
    """Spiked nu = 2, L = 3, Delta = 0.001: alpha_sp < alpha_IT < alpha_alg; at alpha_IT the two
    branches' free entropies agree to the root finder's tolerance times their slope difference; the
    Bayes-optimal branch is the uninformative one just below and the informed one just above."""
    found = thresholds(SMALL_NOISE, 1.0, 1.5, tol=1e-5, scan=17)
    sp, alg, it = found.spinodal, found.algorithmic, found.information_theoretic
    assert all(r.status == "located" for r in (sp, alg, it))
    assert sp.value + sp.tolerance < it.value < alg.value - alg.tolerance
    channel = BayesChannel(SMALL_NOISE)
    at = bayes_branches(SMALL_NOISE, it.value, channel=channel)
    gap = at.informed.free_entropy.value - at.uninformative.free_entropy.value
    assert at.distinct and abs(gap) < 1e-6  # tol 1e-5 times a slope difference below 0.1
    assert bayes_branches(SMALL_NOISE, it.value - 0.005, channel=channel).bayes_optimal == (
        "uninformative"
    )
    above = bayes_branches(SMALL_NOISE, it.value + 0.005, channel=channel)
    assert above.hard_phase and above.bayes.test_error < above.amp.test_error


def test_threshold_ranges_are_checked_and_unbracketed_thresholds_are_named():
    """Nonsense ranges: one ConfigError naming the parameter, where the options are checked (the
    search below trusts them); a threshold outside the range is reported as below or above it,
    not as a number."""
    for arguments, name in [
        ((0.0, 2.0), "alpha_min"),
        ((2.0, 1.0), "alpha_max"),
        ((1.0, math.inf), "alpha_max"),
        ((1.0, 2.0, 0.5), "tol"),
    ]:
        ranges = dict(zip(("alpha_min", "alpha_max", "tol"), arguments, strict=False))
        with pytest.raises(ConfigError, match=name):
            bayes_slr.phase(Delta=0.0, progress=False, **ranges)
    channel = BayesChannel(NOISELESS)  # remembers its evaluations: the second search reuses them
    below = thresholds(NOISELESS, 1.3, 4.0, scan=9, channel=channel)
    above = thresholds(NOISELESS, 0.2, 0.9, scan=9, channel=channel)
    assert below.algorithmic.status == "below range" and below.algorithmic.value is None
    assert below.algorithmic.describe(1.3, 4.0) == "< 1.3"
    assert (
        above.algorithmic.status == "above range"
        and above.perfect_recovery.describe(0.2, 0.9) == "> 0.9"
    )


def test_informed_start_on_a_monte_carlo_argmax_channel_is_finite():
    """Max-SLR at ``nu = inf``, ``L = 3`` (Monte Carlo channel): the argmax channel is 0/0 at
    ``q_k = 1`` exactly, so the informed start sits just below it: the informed iteration
    converges and ``bayes_branches`` gives finite numbers (``theory --bayes`` failed here with a
    NaN before)."""
    config = SLRConfig("max", 1, LengthLaw.fixed(3), math.inf, 0.1)
    channel = BayesChannel(config, mc_samples=256)
    informed = state_evolution(config, 2.0, "informed", channel=channel, max_evaluations=400)
    assert informed.converged and math.isfinite(informed.q_k) and informed.method == "monte carlo"
    branches = bayes_branches(config, 2.0, channel=channel)
    assert math.isfinite(branches.bayes.test_error)
    assert math.isfinite(branches.mutual_information)

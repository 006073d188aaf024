"""The Bayes-optimal state evolution's reported standard errors (a point's: the spread of
independent batches' fixed points, :func:`~bayes_slr.formulas.replica_bayes.bayes_replica_point`;
a threshold's: the spread of the thresholds of independent batches of a Monte Carlo channel,
:func:`~bayes_slr.studies.phase.threshold_stderrs`) against an independent route: the spread of
the number itself over independent seeds."""

from __future__ import annotations

import math

import numpy as np
import pytest

import bayes_slr
from bayes_slr.errors import ConfigError
from bayes_slr.formulas.bayes_channel import BayesChannel
from bayes_slr.formulas.replica_bayes import bayes_replica_point
from bayes_slr.formulas.thresholds import thresholds
from bayes_slr.models.spec import LengthLaw, SLRConfig
from bayes_slr.studies.phase import threshold_stderrs
from bayes_slr.studies.phase_records import PhaseSettings

SPIKED = SLRConfig("spiked", 1, LengthLaw.fixed(3), 2.0, 0.1)
MAX_INF = SLRConfig("max", 1, LengthLaw.fixed(3), math.inf, 0.1)
SEEDS = range(40, 56)


@pytest.mark.parametrize(
    "config, alpha, draws",
    [
        pytest.param(SPIKED, 1.0, 1024, id="spiked-quadrature-error"),
        pytest.param(MAX_INF, 2.0, 512, id="max-monte-carlo-error", marks=pytest.mark.slow),
    ],
)
def test_bayes_reported_stderr_is_the_spread_over_independent_seeds(config, alpha, draws):
    """16 seeds of ``draws`` draws in 8 batches (the max-SLR ``nu = inf`` channel's error is an
    argmax probability per draw: 250 s for 16 seeds of 1024 draws on 2 busy cores, so 512). The
    seeds' sample standard deviation of the test error and of ``q_v`` has 15 degrees of freedom,
    its ratio to the truth in [0.48, 1.59] with probability 0.998 (chi^2_15's 0.001 and 0.999
    quantiles); the mean of 16 reported errors (each from 7 degrees of freedom) is closer to the
    truth. Bounds [0.4, 1.9]: a reported error that misses the fixed point's movement (spiked:
    the error is a quadrature at the overlaps, and 0 was reported) or is three times too large
    fails."""
    points = [bayes_replica_point(config, alpha=alpha, mc_samples=draws, seed=s) for s in SEEDS]
    assert all(point.converged for point in points)
    for value, reported in [
        ([p.test_error for p in points], [p.stderr for p in points]),
        (
            [p.overlaps["q_v"] for p in points],
            [p.diagnostics.overlaps_stderr["q_v"] for p in points],
        ),
    ]:
        ratio = np.std(value, ddof=1) / np.mean(reported)
        assert 0.4 < ratio < 1.9, (ratio, np.std(value, ddof=1), np.mean(reported))


def test_bayes_replicates_refused_beyond_the_draws():
    """Fewer than two draws per batch is refused by name, before any solve, where the options
    are checked (the solvers below trust them)."""
    with pytest.raises(ConfigError, match="channel_draws"):
        bayes_slr.theory(channel_draws=8, replicates=8, progress=False)
    with pytest.raises(ConfigError, match="replicates"):
        bayes_slr.theory(replicates=1, progress=False)


def test_threshold_reported_stderr_is_the_spread_over_independent_seeds():
    """``alpha_alg`` of spiked ``nu = 2``, ``L = 3``, ``Delta = 0`` on a Monte Carlo channel (4096
    draws, 16 seeds; scan of 17 points), its standard error from 8 batches of the draws
    (:func:`~bayes_slr.studies.phase.threshold_stderrs`) against two independent routes: the
    spread over the seeds (the chi^2_15 band of the test above, bounds [0.4, 1.9]: measured 1.15),
    and the quadrature channel's threshold, which the seeds' mean must meet within 4 of its
    standard errors (measured 1.247 +- 0.0075 against 1.24096)."""
    config = SLRConfig("spiked", 1, LengthLaw.fixed(3), 2.0, 0.0)
    settings = PhaseSettings(
        alpha_min=0.5, alpha_max=2.0, tol=1e-5, scan=17, channel_draws=4096, curve_points=2
    )
    values, reported = [], []
    for seed in range(100, 116):
        channel = BayesChannel(config, mc_samples=4096, seed=seed, monte_carlo=True)
        found = thresholds(config, 0.5, 2.0, 1e-5, channel=channel, scan=17).algorithmic
        assert found.status == "located"
        values.append(found.value)
        reported.append(threshold_stderrs(channel, settings, {"alpha_alg": found})["alpha_alg"])
    assert np.all(np.isfinite(reported))
    spread = np.std(values, ddof=1)
    assert 0.4 < spread / np.mean(reported) < 1.9, (spread, np.mean(reported))
    exact = thresholds(config, 0.5, 2.0, 1e-5, scan=17).algorithmic.value
    assert abs(np.mean(values) - exact) < 4 * spread / math.sqrt(len(values))

"""The Monte Carlo error of the ERM replica point (bayes_slr.formulas.replica_erm): its
standard error against the spread over independent seeds, the precision target, the chunked
channel.
"""

from __future__ import annotations

import numpy as np
import pytest

from bayes_slr.formulas.replica_erm import erm_replica_point
from bayes_slr.models.spec import LengthLaw, SLRConfig
from bayes_slr.studies.theory import theory_row
from bayes_slr.studies.theory_records import TheorySettings, curve_warnings

SPIKED = SLRConfig("spiked", 1, LengthLaw.fixed(3), 2.0)


@pytest.mark.parametrize(
    "activation", ["softmax", pytest.param("erf", marks=pytest.mark.full_size_only)]
)
def test_erm_point_does_not_depend_on_the_channel_chunk(monkeypatch, activation):
    """The proximal solves taken 48 draws at a time (a chunk that divides neither the 512 pooled
    points nor a replicate's 128: the remainder path too) give the point of the solves taken all
    at once (the default chunk at ``L = 3``, 65536 draws: the programs of the other 512-point
    tests). The pooled numbers (overlaps, test error, replicon) agree to relative 1e-9: the
    chunks change only the rounding of each Newton solve (measured: 2e-8 on one draw's ``f_out``
    at the uninformed start, where 12 Newton steps leave it not quite stationary), averaged over
    512 draws and contracted by the fixed point. The standard errors are spreads over 4
    replicates, each a step from the point on 128 draws: they agree to relative 1e-4 (measured:
    3e-5). A chunking that dropped or repeated a draw moves either by about 1/128 of itself."""
    from bayes_slr.formulas import replica_erm

    def solve():
        return erm_replica_point(
            SPIKED, activation, alpha=4.0, lam=1.0, mc_samples=512, replicates=4
        )

    def forget_traces():
        """The programs of the module's jitted functions dropped (only theirs: the other tests'
        stay in memory, unlike ``jax.clear_caches``), so that they are traced again with the
        chunk of the moment."""
        jitted = type(replica_erm._run)
        for function in vars(replica_erm).values():
            if isinstance(function, jitted):
                function.clear_cache()

    assert replica_erm.channel_chunk(SPIKED.Lbar) >= 512
    whole = solve()
    chunks_asked = []
    monkeypatch.setattr(replica_erm, "channel_chunk", lambda L: chunks_asked.append(L) or 48)
    forget_traces()
    chunked = solve()
    forget_traces()  # traced again with the default chunk by the tests after this one
    assert chunks_asked, "the chunked solve ran programs traced before the chunk was changed"
    assert whole.converged and chunked.converged
    assert whole.diagnostics.iterations == chunked.diagnostics.iterations
    np.testing.assert_allclose(
        [chunked.test_error, chunked.diagnostics.replicon, *chunked.overlaps.values()],
        [whole.test_error, whole.diagnostics.replicon, *whole.overlaps.values()],
        rtol=1e-9,
    )
    errors = [
        [p.stderr, p.diagnostics.replicon_stderr, *p.diagnostics.overlaps_stderr.values()]
        for p in (chunked, whole)
    ]
    np.testing.assert_allclose(*errors, rtol=1e-4)


@pytest.mark.parametrize("activation", ["softmax", "linear"])
def test_erm_reported_stderr_is_the_spread_over_independent_seeds(activation):
    """The reported standard error (the spread of the replicates' fixed points, each to first
    order about the point, over ``sqrt(replicates)``) against an independent route: the spread
    of the point itself over independent seeds (spiked nu = 2, L = 3, Delta = 0.1, alpha = 4,
    lam = 1, 1024 points in 8 scramblings, 16 seeds).

    The seeds' sample standard deviation has 15 degrees of freedom: its ratio to the truth lies in
    [0.48, 1.59] with probability 0.998 (chi^2_15's 0.001 and 0.999 quantiles); the mean of the
    16 reported errors is closer to the truth than that. Bounds [0.4, 1.9]: a reported error four
    times too small (ratio in [1.9, 6.4]) or three times too large fails.
    """
    points = [
        erm_replica_point(
            SPIKED.replace(Delta=0.1), activation, alpha=4.0, lam=1.0, mc_samples=1024, seed=seed
        )
        for seed in range(20, 36)
    ]
    assert all(point.converged for point in points)
    spread = np.std([point.test_error for point in points], ddof=1)
    reported = np.mean([point.stderr for point in points])
    assert 0.4 < spread / reported < 1.9, (spread, reported)


def test_erm_target_stderr_adds_points_of_the_same_scramblings_until_met(monkeypatch):
    """A point with ``target_stderr`` is solved again on more points of its scramblings until its
    standard error is below the target (the first solve is the plain point's, so a target two
    thirds of its error multiplies the points by 4, the power of two above ``1.5^2``; the error
    falls like ``n^(-1/2)`` or faster, so by 2 or more: 1.33 times the fall the target asks, the
    margin of a third of the error and 16 times the points); at the most points it may take it
    stops above the target, and ``theory``'s rows warn of it. The sizes are those of the other
    tests' points (1024 and 4096 points in 8 scramblings, the row too: it grows from 1024 to its
    cap of 4096): no programs of their own to compile."""
    config, common = SPIKED.replace(Delta=0.1), dict(alpha=4.0, lam=1.0, replicates=8, seed=3)
    plain = erm_replica_point(config, "softmax", mc_samples=1024, **common)
    target = plain.stderr / 1.5
    met = erm_replica_point(
        config, "softmax", mc_samples=1024, target_stderr=target, max_samples=4096, **common
    )
    assert met.converged and met.stderr <= target, (met.stderr, target)
    assert met.diagnostics.mc_samples == 4096 and met.diagnostics.target_stderr == target
    monkeypatch.setattr("bayes_slr.formulas.result.REPLICA_MAX_DRAWS", 4096)
    settings = TheorySettings(
        1.0, 1024, None, 2, 8, target_stderr=target / 100, alpha=4.0, estimator="softmax"
    )
    capped = theory_row(config, settings, seed=3)
    assert capped.diagnostics.mc_samples == 4096 and capped.stderr > target / 100
    assert any("above its target" in line for line in curve_warnings([capped]))

"""The thresholds as curves of ``Delta`` up to their merge (docs/theory.md part D).

Independent routes: the merge point from the sign change of ``min alpha'(t)`` (continuation in
``Delta``) against the existing threshold solver (a scan of the fixed-point curve, then
golden-section searches) at a ``Delta`` on each side; the thresholds of the continuation against
the solver's at the same ``Delta``, within the sum of their error bounds.
"""

from __future__ import annotations

import math

import pytest

from bayes_slr import ConfigError, LengthLaw, SLRConfig
from bayes_slr.formulas.threshold_curves import _sample, _Tracer, threshold_curves
from bayes_slr.formulas.thresholds import thresholds

LAST_HARD, FIRST_EASY = 0.0026, 0.003
"""Spiked ``nu = 2``, ``L = 3``: the solver sees a hard phase at the first (a scan of 49 points
resolves its S) and none at the second."""
TOL = 1e-4


def spiked(Delta: float) -> SLRConfig:
    return SLRConfig("spiked", 1, LengthLaw.fixed(3), 2.0, Delta)


@pytest.fixture(scope="module")
def curves():
    return threshold_curves(spiked(0.0), points=2, tol=TOL, Delta_tol=1e-5)


def test_the_merge_lies_between_the_last_hard_phase_and_the_first_without(curves) -> None:
    merge = curves.merge
    hard = thresholds(spiked(LAST_HARD), 0.5, 2.0, TOL, scan=49)
    easy = thresholds(spiked(FIRST_EASY), 0.5, 2.0, TOL)
    assert hard.algorithmic.status == hard.spinodal.status == "located"
    assert hard.spinodal.value < hard.information_theoretic.value < hard.algorithmic.value
    assert easy.algorithmic.status == easy.spinodal.status == "none"
    assert LAST_HARD < merge.Delta - merge.tolerance < merge.Delta + merge.tolerance < FIRST_EASY
    assert merge.tolerance <= 4e-5 and merge.slope_below < 0.0 < merge.slope_above
    # above the last hard phase's S, at most as far as alpha_alg keeps rising to the merge
    assert hard.algorithmic.value < merge.alpha < hard.algorithmic.value + 0.02

    # the continuation's thresholds at LAST_HARD are the solver's
    tracer = _Tracer(spiked(0.0))
    sample, _ = _sample(tracer, LAST_HARD, merge.t, TOL)
    for found, record in (
        ((sample.alpha_sp, sample.tolerance_sp), hard.spinodal),
        ((sample.alpha_IT, sample.tolerance_IT), hard.information_theoretic),
        ((sample.alpha_alg, sample.tolerance_alg), hard.algorithmic),
    ):
        assert abs(found[0] - record.value) <= found[1] + record.tolerance, record.name


def test_the_curves_run_from_delta_zero_to_the_merge_in_the_theorys_order(curves) -> None:
    first, *_, last = curves.samples
    assert first.Delta == 0.0 and first.alpha_sp == first.alpha_IT == 1.0
    assert first.alpha_alg == pytest.approx(1.24096, abs=2 * TOL)  # docs/theory.md part D
    assert last.Delta == curves.merge.Delta and last.alpha_sp == last.alpha_alg
    Deltas = [sample.Delta for sample in curves.samples]
    assert Deltas == sorted(Deltas)
    for sample in curves.samples:
        assert sample.alpha_sp <= sample.alpha_IT <= sample.alpha_alg


def test_a_monte_carlo_channel_is_refused() -> None:
    with pytest.raises(ConfigError, match="quadrature"):
        threshold_curves(SLRConfig("max", 1, LengthLaw.fixed(3), 2.0), points=2)


def test_at_Delta_0_only_alpha_alg_moves_over_nu_and_L() -> None:
    """Why the continuation is in ``Delta`` only (docs/theory.md part D): at ``Delta = 0``,
    ``alpha_sp = alpha_IT = 1`` exactly for every ``nu`` and ``L``; ``alpha_alg`` falls with ``nu``
    toward 1 without reaching it, ``alpha_alg - 1`` shrinking about like ``e^(-nu / 2)`` (measured
    rates 0.53 per unit of ``nu`` from 4 to 8, 0.54 from 8 to 12), and rises with ``L``.
    """

    def algorithmic(nu: float, L: int) -> float:
        config = SLRConfig("spiked", 1, LengthLaw.fixed(L), nu, 0.0)
        found = thresholds(config, 0.9, 2.0, TOL, scan=17)
        for record in (found.spinodal, found.information_theoretic):
            assert (record.status, record.value, record.tolerance) == ("exact", 1.0, 0.0)
        assert found.algorithmic.status == "located"
        return found.algorithmic.value

    over_nu = [algorithmic(nu, 3) for nu in (2.0, 4.0, 8.0)]
    assert over_nu[0] > over_nu[1] > over_nu[2] > 1.0 + TOL
    rate = math.log((over_nu[1] - 1.0) / (over_nu[2] - 1.0)) / 4.0
    assert 0.4 < rate < 0.65
    assert 1.0 + TOL < algorithmic(2.0, 2) < over_nu[0] < algorithmic(2.0, 5)

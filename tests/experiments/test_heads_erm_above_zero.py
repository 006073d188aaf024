"""Multi-head ERM worse than the zero predictor gets the warning one head gets.

Two heads at presence 0.5, linear attention at ``alpha = 1``, ``D = 8``, ``lam = 1``: 4D
parameters from 8 sequences fit noise, and the test error, 1.50, exceeds the zero predictor's 1.01
on the same sequences by 0.48 +- 0.09 over 12 teachers (5 standard errors: far from the
two-standard-error threshold; the per-teacher excess spreads from -0.04 to 0.97).
"""

from __future__ import annotations

import pytest

import bayes_slr


def test_multihead_erm_above_zero_is_warned_with_its_paired_excess():
    with pytest.warns(bayes_slr.BayesSLRWarning, match="above the zero predictor"):
        result = bayes_slr.gap(
            variant="spiked",
            L=(3,),
            heads=2,
            presence=0.5,
            activations=("linear",),
            alpha=1,
            lam=1.0,
            D=8,
            seeds=12,
            starts=1,
            N_test=2000,
            progress=False,
        )
    erm = result.rows[0].erm["linear"]
    teachers = erm.teachers  # paired: the same test sequences score both predictors
    for excess, error, zero in zip(
        teachers.minus_zero, teachers.test_error, teachers.zero_error, strict=True
    ):
        assert excess == pytest.approx(error - zero, abs=1e-9)
    assert erm.excess_over_zero > 2 * erm.excess_over_zero_stderr
    assert "4D parameters" in " ".join(result.warnings)
    (warning,) = [w for w in result.warnings if "above the zero predictor" in w]
    assert "ERM linear: test error" in warning and f"{erm.excess_over_zero:.3g} +-" in warning

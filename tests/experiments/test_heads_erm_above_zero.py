"""Multi-head ERM worse than the zero predictor gets the warning one head gets.

Two heads at presence 0.5, linear attention at ``alpha = 1``, ``D = 8``: 4D parameters from 8
sequences fit noise, and the test error, 1.42, exceeds the zero predictor's 1.00 on the same
sequences by 0.42 +- 0.03 (14 standard errors: far from the two-standard-error threshold).
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
            D=8,
            seeds=2,
            starts=1,
            N_test=2000,
            progress=False,
        )
    erm = result.rows[0].heads.erm["linear"]
    for seed in erm.per_seed:  # paired: the same test sequences score both predictors
        assert seed.excess_over_zero == pytest.approx(seed.test_error - seed.zero_error, abs=1e-9)
    assert erm.excess_over_zero > 2 * erm.excess_over_zero_stderr
    (warning,) = [w for w in result.warnings if "above the zero predictor" in w]
    assert "ERM linear: test error" in warning and f"{erm.excess_over_zero:.3g} +-" in warning

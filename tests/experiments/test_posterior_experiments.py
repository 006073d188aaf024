"""Pieces of the posterior experiments that need no sampling: the 1/D fit and the warnings."""

from __future__ import annotations

import numpy as np
import pytest

from bayes_slr.experiments.posterior import fit_against_inverse_D, warnings_of


def test_fit_against_inverse_D_recovers_intercept_and_its_stderr():
    """Exact data: exact fit. Noisy data (1000 replicates): the stated intercept standard error
    matches the replicate spread within 10% (sampling error of a standard deviation from 1000
    draws is about 2%)."""
    sizes, stderrs = [25, 50, 100], [0.02, 0.01, 0.005]
    exact = fit_against_inverse_D(sizes, [0.01 + 0.5 / D for D in sizes], stderrs)
    assert exact["intercept"] == pytest.approx(0.01) and exact["slope"] == pytest.approx(0.5)
    rng = np.random.default_rng(0)
    intercepts = [
        fit_against_inverse_D(
            sizes, [0.01 + 0.5 / D + s * rng.normal() for D, s in zip(sizes, stderrs)], stderrs
        )["intercept"]
        for _ in range(1000)
    ]
    assert np.std(intercepts) == pytest.approx(exact["intercept_stderr"], rel=0.1)


def test_warnings_name_each_reason():
    clean = {
        "rhat_max": 1.001,
        "ess_bulk_min": 800.0,
        "divergences": 0,
        "importance_ess": {"median": 900.0, "q05": 700.0, "draws": 1000},
        "multimodal": False,
    }
    assert warnings_of(clean) == []
    bad = {
        **clean,
        "rhat_max": 1.2,
        "ess_bulk_min": 50.0,
        "divergences": 3,
        "importance_ess": {"median": 40.0, "q05": 5.0, "draws": 1000},
        "multimodal": True,
        "start_agreement": 5.0,
        "start_check": {"overlap_difference_in_mcse": {"m_k": 9.0, "q_v": -1.0}},
    }
    lines = warnings_of(bad)
    assert len(lines) == 5
    for word in ("r_hat", "ESS bulk", "divergent", "importance ESS", "starts disagree"):
        assert any(word in line for line in lines), word

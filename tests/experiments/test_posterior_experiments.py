"""Pieces of the posterior experiments that need no sampling: the 1/D fit, the warnings, the
options (without JAX), and the sweep's figure."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import matplotlib.pyplot as plt
import numpy as np
import pytest

from bayes_slr.experiments.base import Provenance
from bayes_slr.experiments.posterior_report import PLAIN, WEIGHTED
from bayes_slr.experiments.posterior_sweep import (
    NOT_CONVERGED_LABEL,
    ORACLE_LABEL,
    PosteriorSweepOptions,
    PosteriorSweepResult,
)
from bayes_slr.studies.posterior_records import (
    Diagnostic,
    Estimate,
    ImportanceESS,
    PosteriorSummary,
    PredictorError,
    StartCheck,
    posterior_warnings,
)
from bayes_slr.studies.posterior_scaling import fit_against_inverse_D


def test_fit_against_inverse_D_recovers_intercept_and_its_stderr():
    """Exact data: exact fit. Noisy data (1000 replicates): the stated intercept standard error
    matches the replicate spread within 10% (sampling error of a standard deviation from 1000
    draws is about 2%)."""
    sizes, stderrs = [25, 50, 100], [0.02, 0.01, 0.005]
    exact = fit_against_inverse_D(sizes, [0.01 + 0.5 / D for D in sizes], stderrs)
    assert exact.intercept == pytest.approx(0.01) and exact.slope == pytest.approx(0.5)
    rng = np.random.default_rng(0)
    intercepts = [
        fit_against_inverse_D(
            sizes, [0.01 + 0.5 / D + s * rng.normal() for D, s in zip(sizes, stderrs)], stderrs
        ).intercept
        for _ in range(1000)
    ]
    assert np.std(intercepts) == pytest.approx(exact.intercept_stderr, rel=0.1)


CLEAN_ESS = ImportanceESS(median=900.0, q05=700.0, draws=1000)
DISAGREEING = StartCheck(
    init="informed",
    bayes_error=PredictorError(0.5, 0.01),
    posterior_mean_f_error=PredictorError(0.5, 0.01),
    overlaps={"m_k": 0.1},
    overlap_difference_in_mcse={"m_k": 9.0, "q_v": -1.0},
    rhat_max=1.0,
    agreement=5.0,
    multimodal=True,
)


def test_warnings_name_each_reason():
    """Every reason gives its line (the command-level lines are checked in
    tests/cli/test_cli_posterior.py); a NaN bulk ESS (a chain that never moved) warns too."""
    assert posterior_warnings(1.001, 800.0, 0, None, CLEAN_ESS) == []
    assert posterior_warnings(1.001, 800.0, None, None, CLEAN_ESS) == []  # Gibbs: no notion
    lines = posterior_warnings(
        1.2, 50.0, 3, DISAGREEING, ImportanceESS(median=40.0, q05=5.0, draws=1000)
    )
    assert len(lines) == 5
    for word in (
        "r_hat",
        "ESS bulk",
        "3 divergent transitions",
        "importance ESS",
        "starts disagree",
    ):
        assert any(word in line for line in lines), word
    assert any("m_k by +9.0 MCSE" in line for line in lines)
    assert posterior_warnings(1.001, float("nan"), 0, None, CLEAN_ESS)[0].startswith("ESS bulk")


def _summary(alpha: float, error: float, rhat: float) -> PosteriorSummary:
    diagnostic = Diagnostic(0.5, 0.1, 0.01, rhat, 500.0, 500.0)
    return PosteriorSummary(
        alpha=alpha,
        N=round(alpha * 20),
        sampler="gibbs",
        bayes_error=PredictorError(error, 0.01),
        posterior_mean_f_error=PredictorError(error + 0.01, 0.01),
        importance_ess=CLEAN_ESS,
        n_test=1000,
        test_set="fresh sequences from the teacher",
        oracle_error=Estimate(0.48, 0.002),
        population_bayes_error=0.35,
        prior_predictive_error=Estimate(1.1, 0.01),
        paired_differences=None,
        rhat_max=rhat,
        ess_bulk_min=500.0,
        ess_tail_min=500.0,
        divergences=None,
        diagnostics={"m_k": diagnostic},
        overlaps={"m_k": 0.5, "m_v": 0.8, "q_k": 0.6, "q_v": 0.9},
        start_check=None,
        erm=None,
        data=None,
    )


def test_sweep_plot_marks_unconverged_points_and_keeps_the_legend_off_the_data():
    """Issue 22 item 5: the unconverged point is drawn hollow with a legend entry; the weighted
    and the plain predictors have their own labels; the oracle and population references are
    drawn; the legend lies outside the axes; one tick label per alpha, none from minor ticks."""
    options = PosteriorSweepOptions(alpha=(0.5, 1, 2, 4, 8), D=20)
    rows = tuple(
        _summary(alpha, 1.0 / (1 + alpha), 1.108 if alpha == 1 else 1.002)
        for alpha in options.alpha
    )
    result = PosteriorSweepResult(options, rows, Provenance("posterior-sweep", 0, {}, "cpu", ""))
    ax = result.plot()
    try:
        figure = ax.figure
        figure.canvas.draw()
        labels = [text.get_text() for text in ax.get_legend().get_texts()]
        for label in (WEIGHTED, PLAIN, NOT_CONVERGED_LABEL, ORACLE_LABEL):
            assert label in labels, label
        assert "population Bayes (alpha -> inf)" in labels
        hollow = next(line for line in ax.get_lines() if line.get_label() == NOT_CONVERGED_LABEL)
        assert list(hollow.get_xdata()) == [1.0] and hollow.get_markerfacecolor() == "white"
        oracle = next(line for line in ax.get_lines() if line.get_label() == ORACLE_LABEL)
        assert list(oracle.get_ydata()) == [0.48, 0.48]
        renderer = figure.canvas.get_renderer()
        legend_box = ax.get_legend().get_window_extent(renderer)
        assert legend_box.x0 >= ax.get_window_extent(renderer).x1  # beside the axes, not on them
        ticks = [t for t in ax.get_xticklabels() if t.get_text()]
        assert [t.get_text() for t in ticks] == ["0.5", "1", "2", "4", "8"]
        assert not [t for t in ax.xaxis.get_minorticklabels() if t.get_text()]
        boxes = [t.get_window_extent(renderer) for t in ticks]
        assert all(a.x1 < b.x0 for a, b in zip(boxes, boxes[1:]))  # no overlapping labels
    finally:
        plt.close(ax.figure)


OPTIONS_WITHOUT_JAX = textwrap.dedent(
    """
    import sys
    from bayes_slr.errors import ConfigError
    from bayes_slr.experiments.posterior import PosteriorOptions
    from bayes_slr.experiments.posterior_sweep import PosteriorSweepOptions
    PosteriorOptions(alpha=2, D=20, sampler="gibbs")
    PosteriorSweepOptions(alpha=(1, 2), variant="max")
    for bad in ({"chains": 0}, {"Delta": 0.0}, {"sampler": "hmc"}, {"alpha": -1.0}):
        try:
            PosteriorOptions(**bad)
        except ConfigError:
            pass
        else:
            raise SystemExit(f"{bad} was accepted")
    print("jax" in sys.modules)
    """
)


@pytest.mark.xfail(
    strict=False,
    reason="the variant and sampler registries still import JAX (being made importable without)",
)
def test_options_are_validated_without_importing_jax():
    """Good and bad options are validated in a fresh process without importing JAX (issue 22 item
    11: a bad value is refused within a second)."""
    done = subprocess.run(
        [sys.executable, "-c", OPTIONS_WITHOUT_JAX], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "False"

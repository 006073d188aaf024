"""Figures: the posterior-sweep plot draws every reference its rows carry."""

from __future__ import annotations

import matplotlib.pyplot as plt

from bayes_slr import LengthLaw, SLRConfig
from bayes_slr.plots import ORACLE_LABEL, posterior_sweep_figure


def _row(alpha: float, error: float) -> dict:
    return {
        "alpha": alpha,
        "bayes_test_error": error,
        "stderr": 0.01,
        "erm": None,
        "oracle_error": {"value": 0.48, "stderr": 0.002},
        "population_bayes_error": 0.35,
        "prior_predictive_error": {"value": 1.1, "stderr": 0.01},
    }


def test_posterior_sweep_draws_the_teachers_oracle_beside_population_bayes():
    config = SLRConfig("spiked", 20, LengthLaw.fixed(3), 2.0, 0.1)
    figure = posterior_sweep_figure(
        [_row(1.0, 0.8), _row(4.0, 0.55)], config, ("softmax", "linear")
    )
    try:
        lines = {line.get_label(): line for line in figure.axes[0].get_lines()}
        assert ORACLE_LABEL in lines and "population Bayes (alpha -> inf)" in lines
        assert list(lines[ORACLE_LABEL].get_ydata()) == [0.48, 0.48]
        assert ORACLE_LABEL in [text.get_text() for text in figure.axes[0].get_legend().get_texts()]
    finally:
        plt.close(figure)

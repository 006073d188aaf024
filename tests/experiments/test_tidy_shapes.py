"""One shape per result: ``tidy_rows()`` keys are ``to_pandas()``'s columns (nested fields joined
by ``_``), every cell a scalar, bayes-risk's exact error bound named ``bound`` in its table and
its frame, and a posterior summary's ``repr`` one short line."""

from __future__ import annotations

import pytest

import bayes_slr
from bayes_slr.numerics.record import flatten


def assert_tidy(result) -> None:
    rows = result.tidy_rows()
    frame = result.to_pandas()
    assert list(frame.columns) == list(dict.fromkeys(k for row in rows for k in row))
    for row in rows:
        for name, value in row.items():
            assert "." not in name, name
            assert not isinstance(value, (list, tuple, dict)), (name, value)


def test_flatten_makes_every_cell_a_scalar():
    record = {"erm": {"lam": [0.1, 1.0], "notes": ["a", "b"], "fit": None}, "L": 3}
    assert flatten(record) == {
        "erm_lam_0": 0.1,
        "erm_lam_1": 1.0,
        "erm_notes": "a; b",
        "erm_fit": None,
        "L": 3,
    }


@pytest.mark.parametrize("method", ["exact", "mc"])
def test_bayes_risk_names_its_error_column_as_its_table_does(method):
    result = bayes_slr.bayes_risk(L=(2, 3), method=method, mc_sequences=1000, progress=False)
    name = "bound" if method == "exact" else "stderr"
    assert result.table().splitlines()[0].split()[5] == name
    assert name in result.to_pandas().columns
    assert_tidy(result)


def test_gap_and_theory_rows_are_tidy():
    assert_tidy(bayes_slr.gap(variant="spiked", L=(3,), progress=False))
    # the rows' shape, not their accuracy: 512 channel draws in 4 scramblings (the programs of the
    # replica tests) instead of the default 32768 (the same columns)
    theory = bayes_slr.theory(
        alpha=(2.0,), activations=("softmax",), channel_draws=512, replicates=4, progress=False
    )
    assert_tidy(theory)


@pytest.mark.filterwarnings("ignore::bayes_slr.BayesSLRWarning")  # 20 draws a chain
def test_a_posterior_summary_repr_is_one_short_line_and_its_row_tidy():
    result = bayes_slr.posterior(
        D=5, alpha=1, chains=2, warmup=20, samples=20, N_test=100, erm=False, progress=False
    )
    summary = result.summary
    shown = repr(summary)
    assert "\n" not in shown and len(shown) < 300
    value = summary.bayes_error.value
    assert shown.startswith("PosteriorSummary(alpha=1") and f"bayes_error={value:.4g}" in shown
    assert_tidy(result)

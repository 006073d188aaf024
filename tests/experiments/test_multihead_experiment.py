"""``multihead`` (docs/multihead.md section 10): its rows are the numbers of the functions it
calls, one head at full presence is one-head SLR (softmax at the Bayes error), Bayes-softmax
reaches the Bayes error at rho < 1 where softmax falls short, and bad input is one line."""

from __future__ import annotations

import json

import pytest

import bayes_slr
from bayes_slr import LengthLaw, SLRConfig
from bayes_slr.cli.main import main
from bayes_slr.formulas.bayes import bayes_error_exact, presence_bayes_error_exact
from bayes_slr.formulas.optimum import optimal_population_error
from bayes_slr.formulas.population_mc import population_error_mc
from bayes_slr.studies.gap_records import ALL_OVERLAPS, UPPER_BOUND

SEQUENCES = 2_000


def test_one_head_at_full_presence_is_one_head_slr_and_its_rows_are_the_functions_values():
    result = bayes_slr.multihead(
        heads=1, presence=1.0, activations=("softmax",), mc_sequences=SEQUENCES, progress=False
    )
    (row,) = result.rows
    config = SLRConfig("spiked", 1, LengthLaw.fixed(3), 2.0)
    one_head = bayes_error_exact(config)
    assert abs(row.bayes_error - one_head.value) <= row.bayes_bound + one_head.error_bound
    (softmax,) = row.optima
    assert softmax.scope == ALL_OVERLAPS
    assert abs(softmax.error - one_head.value) <= 1e-6
    optimum = optimal_population_error("softmax", config)
    assert (softmax.error, softmax.overlaps) == (optimum.error, optimum.overlaps)
    o = optimum.overlaps
    mc = population_error_mc("softmax", config, o.m_k, o.q_k, o.m_v, o.q_v, o.c, SEQUENCES, 0)
    assert (softmax.mc.mean, softmax.mc.stderr) == (float(mc.mean), float(mc.stderr))
    for check, value in ((softmax.mc, softmax.error), (row.bayes_mc, row.bayes_error)):
        assert abs(check.mean - value) <= 4 * check.stderr
    ax = result.plot()
    assert [text.get_text() for text in ax.get_legend().get_texts()] == ["softmax", "Bayes"]


def test_bayes_softmax_reaches_the_bayes_error_where_softmax_falls_short(capsys):
    """Softmax's aligned optimum is an upper bound: beside it, the optimum over all overlaps,
    below it on the same fresh sequences (paired, 4 standard errors); Bayes-softmax's is the
    Bayes error, over all overlaps, and is not searched."""
    argv = ["multihead", "--presence", "0.5", "--activations", "softmax", "bayes_softmax"]
    sizes = ["--search-sequences", "10000", "--paired-sequences", "50000"]
    assert main([*argv, *sizes, "--mc-sequences", "0", "--json", "--quiet"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["rows"]
    config = SLRConfig("spiked", 1, LengthLaw.fixed(3), 2.0, heads=2, presence=0.5)
    exact = presence_bayes_error_exact(config)
    assert (row["bayes_error"], row["bayes_bound"]) == (exact.value, exact.error_bound)
    softmax, bayes_softmax = row["optima"]
    assert abs(bayes_softmax["error"] - exact.value) <= 1e-3
    assert bayes_softmax["scope"] == ALL_OVERLAPS
    assert softmax["error"] > exact.value + 1e-3 and softmax["scope"] == UPPER_BOUND
    assert softmax["mc"] is None and row["bayes_mc"] is None
    found = softmax["all_overlaps"]
    assert found["difference"] < -4 * found["difference_stderr"]
    assert found["aligned_error"] == softmax["error"] and bayes_softmax["all_overlaps"] is None
    assert main([*argv, *sizes, "--mc-sequences", "0", "--quiet"]) == 0
    table = capsys.readouterr().out
    assert "softmax all" in table and "bayes_softmax all" not in table and "all - aligned" in table


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--presence", "0.5", "0"], "presence must be a probability in (0, 1]"),
        (["--presence", "1.5"], "presence must be a probability in (0, 1]"),
        (["--heads", "0"], "heads must be an integer >= 1"),
        (["--variant", "max", "--presence", "1", "0.5"], "presence must be 1 for the max"),
        (["--mc-sequences", "1"], "mc_sequences must be 0 (none) or >= 2"),
        (["--search-sequences", "1"], "search_sequences must be 0 (none) or >= 2"),
        (["--paired-sequences", "1"], "paired_sequences must be an integer >= 2"),
        (["--activations", "nope"], "activations must be one of"),
        (["--variant", "max", "--presence", "1"], "softmax1 has population terms only where"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, message, capsys):
    assert main(["multihead", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err

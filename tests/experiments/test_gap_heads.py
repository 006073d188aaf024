"""``gap --heads --presence`` (docs/multihead.md section 10): one head at full presence is
today's ``gap``; with several heads its population columns are the numbers of the functions they
come from (Bayes-softmax at the Bayes error, softmax above it and marked as an upper bound); ERM
with ``H_s`` heads lies above the Bayes error; bad input is one line and exit status 2."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import bayes_slr
from bayes_slr import LengthLaw, SLRConfig
from bayes_slr.cli.main import main
from bayes_slr.experiments import EXPERIMENTS
from bayes_slr.experiments.gap_records import GapOptions
from bayes_slr.experiments.runner import open_log, sweep_settings
from bayes_slr.formulas.bayes import presence_bayes_error_exact
from bayes_slr.formulas.optimum import optimal_population_error
from bayes_slr.studies.gap_records import ALL_OVERLAPS, UPPER_BOUND
from bayes_slr.studies.gap_rows import GapRow

ACTIVATIONS = ("softmax", "bayes_softmax", "linear")
GAP_LOGS = sorted((Path(__file__).parents[2] / "docs" / "results").rglob("gap.jsonl"))
TWO_HEADS = SLRConfig("spiked", 1, LengthLaw.fixed(3), 2.0, Delta=0.0, heads=2, presence=0.5)


def test_one_head_at_full_presence_is_todays_gap():
    today = bayes_slr.gap(variant="spiked", L=(3,), activations=("softmax",), progress=False)
    given = bayes_slr.gap(
        variant="spiked", L=(3,), activations=("softmax",), heads=1, presence=1.0, progress=False
    )
    assert given.rows == today.rows and given.rows[0].heads is None
    assert given.table() == today.table()
    assert given.options.lam == "auto" and given.options.student_heads is None


def test_two_heads_population_columns_are_the_functions_values():
    result = bayes_slr.gap(
        variant="spiked", L=(3,), heads=2, presence=0.5, activations=ACTIVATIONS, progress=False
    )
    (row,) = result.rows
    exact = presence_bayes_error_exact(TWO_HEADS)
    assert (row.bayes, row.bayes_error_bound) == (exact.value, exact.error_bound)
    for activation in ACTIVATIONS:
        optimum = optimal_population_error(activation, TWO_HEADS)
        assert row.population[activation] == optimum.error
        assert row.optimal_overlaps[activation] == optimum.overlaps
        assert row.gap[activation] == pytest.approx(optimum.error - exact.value, abs=1e-12)
    assert abs(row.population["bayes_softmax"] - row.bayes) <= 1e-3
    assert row.heads.scopes["bayes_softmax"] == ALL_OVERLAPS
    assert row.population["softmax"] > row.bayes + 1e-3
    assert row.heads.scopes["softmax"] == UPPER_BOUND
    assert " ^" in result.table() and "upper bound" in result.table()


def test_a_missing_student_head_loses_its_share_of_the_signal():
    result = bayes_slr.gap(
        variant="spiked",
        L=(3,),
        heads=2,
        presence=0.5,
        student_heads=1,
        activations=("linear",),
        progress=False,
    )
    (row,) = result.rows
    aligned = optimal_population_error("linear", TWO_HEADS).error
    assert row.population["linear"] == pytest.approx(1 - (1 - aligned) / 2, abs=1e-12)
    assert row.heads.scopes["linear"] == UPPER_BOUND


def test_an_extra_student_head_on_one_head_slr_is_silenced():
    one_head = bayes_slr.gap(variant="spiked", L=(3,), activations=("softmax",), progress=False)
    extra = bayes_slr.gap(
        variant="spiked", L=(3,), activations=("softmax",), student_heads=2, progress=False
    )
    (row,), (today,) = extra.rows, one_head.rows
    assert row.heads.student_heads == 2 and today.heads is None
    assert row.population["softmax"] == pytest.approx(today.population["softmax"], abs=1e-9)
    assert row.heads.scopes["softmax"] == ALL_OVERLAPS


def test_presence_below_one_leaves_the_max_setting_out_with_a_note():
    options = GapOptions(presence=0.5).resolved()
    assert options.settings() == (("spiked", 2.0),)
    assert "softmax1" in options.activations and options.lam == "auto"
    assert options.student_heads == 1


def test_tiny_erm_with_two_heads_lies_above_the_bayes_error_and_its_oracle():
    """ERM with two heads is the one-head ``gap``'s point with heads an axis: ``lam = "auto"`` by
    default, the oracle beside it (the teachers' exact known-directions predictor: the Bayes
    error of these exact teachers within its errors), the paired differences."""
    result = bayes_slr.gap(
        variant="spiked",
        L=(3,),
        heads=2,
        presence=0.5,
        activations=("bayes_softmax", "softmax"),
        alpha=16,
        D=6,
        seeds=2,
        starts=2,
        N_test=2000,
        progress=False,
    )
    (row,) = result.rows
    erm = row.erm["bayes_softmax"]
    assert len(erm.heads) == 2 and len(erm.heads[0].permutation) == 2 and erm.lam_auto
    assert erm.test_error > row.bayes - 3 * erm.stderr
    assert abs(row.oracle.value - row.bayes) <= 4 * row.oracle.stderr
    assert row.heads.erm_gap["bayes_softmax"] == erm.test_error - row.bayes
    assert GapRow.from_dict(row.to_dict()) == row  # what a sweep log keeps and reads back
    assert f"{erm.test_error:.4f}+-{erm.stderr:.4f}" in result.table()
    assert "permutation per seed" in result.table() and "oracle" in result.table()
    ax = result.plot()
    labels = [text.get_text() for text in ax.get_legend().get_texts()]
    assert "bayes_softmax ERM" in labels
    tidy = result.tidy_rows()[0]
    assert tidy["erm_test_error"] == erm.test_error and tidy["scope"] == ALL_OVERLAPS
    assert tidy["oracle"] == row.oracle.value
    # the two activations on the same teachers, training sets and test sequences, paired
    d = row.erm_paired_differences["bayes_softmax - softmax"]
    other = row.erm["softmax"]
    assert d.n == 2 and d.value == pytest.approx(erm.test_error - other.test_error, abs=1e-12)
    assert d.unpaired_stderr == pytest.approx(math.hypot(erm.stderr, other.stderr))
    assert "2 teachers: bayes_softmax " in result.table()
    assert "bayes_softmax - oracle" in row.erm_paired_differences


def test_a_multi_head_data_file_of_simulate_is_what_gap_reads(tmp_path):
    """``simulate --heads`` writes what ``gap --data`` reads: the file's heads and presence set
    the task (a contradicting ``heads`` is refused), ERM has the file's two heads, its teacher
    gives the oracle (the exact teacher's Bayes error within 4 standard errors); without the
    teacher the two activations are compared on held-out sequences."""
    path = tmp_path / "heads.npz"
    argv = ["simulate", "--heads", "2", "--presence", "0.5", "--N", "96", "--D", "6"]
    assert main([*argv, "--L", "3", "--exact-teacher", "--out", str(path), "--quiet"]) == 0
    result = bayes_slr.gap(
        data=path, activations=("linear",), starts=1, N_test=4000, progress=False
    )
    (row,) = result.rows
    assert (row.heads.heads, row.heads.presence, result.options.student_heads) == (2, 0.5, 2)
    erm = row.erm["linear"]
    assert len(erm.heads) == 1 and len(erm.heads[0].permutation) == 2
    assert abs(row.oracle.value - row.bayes) <= 4 * row.oracle.stderr
    with pytest.raises(bayes_slr.ConfigError, match="heads = 3 .given. conflicts with heads = 2"):
        bayes_slr.gap(data=path, heads=3, progress=False)
    with np.load(path) as arrays:
        kept = {name: arrays[name] for name in arrays.files if name not in ("k_star", "v_star")}
    np.savez(tmp_path / "no_teacher.npz", **kept)
    result = bayes_slr.gap(
        data=tmp_path / "no_teacher.npz",
        activations=("linear", "softmax"),
        starts=1,
        progress=False,
    )
    (row,) = result.rows
    assert row.oracle is None and row.erm["linear"].fit.offsets is not None
    assert "linear - softmax" in row.erm_paired_differences and "held-out" in result.table()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--heads", "0"], "heads must be an integer >= 1"),
        (["--presence", "0"], "presence must be a probability in (0, 1]"),
        (["--presence", "1.5"], "presence must be a probability in (0, 1]"),
        (["--variant", "max", "--presence", "0.5"], "presence must be 1 for the max"),
        (["--heads", "2", "--init", "informed"], "init: 'informed' is one-head only"),
        (["--heads", "3", "--D", "5", "--alpha", "4"], "D must be an integer >= 6"),
        (["--student-heads", "0"], "student_heads must be an integer >= 1"),
        (["--heads", "2", "--student-heads", "0"], "student_heads must be an integer >= 1"),
        (["--heads", "2", "--activations", "nope"], "activations must be one of"),
        (
            ["--heads", "2", "--variant", "max", "--activations", "softmax1"],
            "softmax1 has population terms only where",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, message, capsys):
    assert main(["gap", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err


@pytest.mark.parametrize("path", GAP_LOGS, ids=[path.parent.name for path in GAP_LOGS])
def test_a_gap_log_written_before_heads_existed_resumes(path):
    """Each point of a committed ``gap`` sweep log, written without ``heads``, ``presence`` and
    ``student_heads``, is found under the key a run of its settings asks for now."""
    experiment = EXPERIMENTS.get("gap")
    log = open_log(experiment, path)
    for record in log:
        logged = record["provenance"]["config"]
        assert "heads" not in logged["settings"]
        options = experiment.options_type(**logged["settings"]).resolved()
        asked = sweep_settings(experiment, options)
        assert log.result({"point": logged["point"], "settings": asked}) is record["result"]

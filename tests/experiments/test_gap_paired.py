"""``gap`` with ERM: the paired differences of activations on the same teachers, against the
oracle and the zero predictor, with the per-teacher figures they derive from, in the rows, the
table, the frames and the JSON; sweep logs written before they were stored still read."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import bayes_slr
from bayes_slr.numerics.paired import paired_difference
from bayes_slr.records import json_text
from bayes_slr.studies.gap_rows import GapSolved, erm_differences

ACTIVATIONS = ("softmax", "linear")


@pytest.fixture(scope="module")
def result():
    """A small ERM point: spiked ``nu = 2``, ``L = 3``, ``D = 16``, ``alpha = 8``, 3 teachers."""
    return bayes_slr.gap(
        variant="spiked",
        L=3,
        activations=ACTIVATIONS,
        alpha=8.0,
        D=16,
        seeds=3,
        lam=0.1,
        N_test=5000,
        progress=False,
    )


def test_every_activation_sees_the_same_teachers_and_random_numbers(result):
    """Teacher ``i`` and the random numbers of its test sequences are the same for both
    activations (the teacher's coordinates come first in the span of each activation's fits):
    the zero predictor's and the oracle's errors agree exactly teacher by teacher, while they
    differ between teachers (``|v*|^2 / D`` scatters by ``sqrt(2/D) = 0.35``) far beyond their
    Monte Carlo errors."""
    (row,) = result.rows
    a, b = (row.erm[name].teachers for name in ACTIVATIONS)
    assert len(a.zero_error) == 3
    assert a.zero_error == pytest.approx(b.zero_error, abs=1e-12)
    assert a.oracle_error == pytest.approx(b.oracle_error, abs=1e-12)
    assert np.ptp(a.zero_error) > 4 * max(a.zero_stderr)


def test_differences_are_paired_and_consistent_with_the_errors(result):
    """``a - zero`` is the row's excess over the zero predictor; ``a - oracle`` is paired
    sequence by sequence, so its error is below the unpaired one of the two means; ``softmax -
    linear`` is the per-teacher difference of the two excesses over the oracle, whose mean is the
    difference of the ERM means (the oracle terms cancel), and whose standard error is below the
    two errors' combined: the teachers' luck (their norms) is shared by both activations and
    cancels."""
    (row,) = result.rows
    differences = row.erm_paired_differences
    assert list(differences) == [
        "softmax - linear",
        "softmax - oracle",
        "linear - oracle",
        "softmax - zero",
        "linear - zero",
    ]
    for name in ACTIVATIONS:
        erm = row.erm[name]
        assert differences[f"{name} - zero"].value == pytest.approx(erm.excess_over_zero)
        assert differences[f"{name} - zero"].stderr == pytest.approx(erm.excess_over_zero_stderr)
        oracle = differences[f"{name} - oracle"]
        assert oracle.n == 3 and oracle.stderr < oracle.unpaired_stderr
    d = differences["softmax - linear"]
    softmax, linear = row.erm["softmax"], row.erm["linear"]
    assert d.unpaired_stderr == pytest.approx(math.hypot(softmax.stderr, linear.stderr))
    assert d.value == pytest.approx(softmax.test_error - linear.test_error, abs=1e-12)
    assert d.stderr < d.unpaired_stderr


def test_pairing_beats_the_unpaired_error_through_the_teachers_shared_luck(result):
    """The identity ``var(a - b) = var(a) + var(b) - 2 cov(a, b)`` over the teachers: the
    per-teacher errors of the two activations covary positively (the same teacher is easy or
    hard for both), which is why the paired error is smaller."""
    (row,) = result.rows
    a, b = (np.array(row.erm[name].teachers.test_error) for name in ACTIVATIONS)
    cov = np.cov(a, b, ddof=1)
    assert cov[0, 1] > 0
    assert np.var(a - b, ddof=1) == pytest.approx(cov[0, 0] + cov[1, 1] - 2 * cov[0, 1])
    raw = paired_difference(
        a, b, row.erm["softmax"].teachers.stderr, row.erm["linear"].teachers.stderr
    )
    assert raw.stderr < raw.unpaired_stderr


def test_table_frame_and_json_carry_the_differences(result):
    """One short block: the decided relation of the two activations with the unpaired error
    beside, and each against the oracle and the zero predictor; a tidy frame, one row per
    difference; the JSON, with the per-teacher figures."""
    (row,) = result.rows
    table = result.rows_table()
    d = row.erm_paired_differences["softmax - linear"]
    symbol = {1: ">", -1: "<", 0: "~"}[d.sign()]
    assert f"softmax {symbol} linear {d.value:+.4f}+-{d.stderr:.4f}" in table
    for name in ("softmax - oracle", "linear - zero"):
        a, b = name.split(" - ")
        other = row.erm_paired_differences[name]
        sign = {1: ">", -1: "<", 0: "~"}[other.sign()]
        assert f"{a} {sign} {b} {other.value:+.4f}+-{other.stderr:.4f}" in table
    frame = result.differences_to_pandas()
    assert len(frame) == 5 and set(frame.difference) == set(row.erm_paired_differences)
    (entry,) = frame[frame.difference == "softmax - linear"].to_dict("records")
    assert (entry["a"], entry["b"], entry["n"]) == ("softmax", "linear", 3)
    assert entry["stderr"] == d.stderr and entry["sign"] == d.sign()
    tidy = result.to_pandas()
    per_teacher = [c for c in tidy.columns if c.startswith("erm_teachers_test_error_")]
    assert len(per_teacher) == 3  # one scalar column per teacher
    data = json.loads(json_text(result.to_json()))["rows"][0]
    assert data["erm_paired_differences"]["softmax - linear"]["stderr"] == d.stderr
    assert data["erm"]["linear"]["teachers"]["minus_oracle"] == list(
        row.erm["linear"].teachers.minus_oracle
    )


def test_sweep_log_written_before_the_per_teacher_figures_still_reads(result):
    """A solved ERM point of an older log (no ``teachers``) reads, and its row has no paired
    differences rather than wrong ones."""
    (row,) = result.rows
    old = {
        "erm": {k: v for k, v in row.erm["softmax"].to_dict().items() if k != "teachers"},
        "oracle": row.oracle.to_dict(),
    }
    solved = GapSolved.from_dict(old)
    assert solved.erm.teachers is None
    erm = {"softmax": solved.erm, "linear": row.erm["linear"]}
    assert erm_differences(erm, ACTIVATIONS) is None

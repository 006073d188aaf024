"""``bayes-slr dynamics --heads --presence --student-heads`` and ``bayes_slr.dynamics(heads=...)``
(docs/multihead.md, "Dynamics"): with one head it is the one-head command; with two, online SGD
ends where the SGD ODE from the same starts ends; the rows read back from a sweep log; the
table and the head-overlap figure; every bad input one line and exit status 2.

Sizes of tests/formulas/test_multihead_flow.py's CI comparison of online SGD with its ODE (two
softmax heads, ``D = 100``, ``eta = 1``, ``B = 32``, to ``t = 6``: the plateau where both heads
learn the sum of the teacher keys), with three seeds.
"""

from __future__ import annotations

import json
import math

import matplotlib.pyplot as plt
import numpy as np
import pytest

import bayes_slr
import bayes_slr.experiments.dynamics as experiment_module
from bayes_slr.cli.main import main
from bayes_slr.records import json_text
from bayes_slr.studies.dynamics_records import DynamicsRow, HeadsDynamicsRow

TWO_HEADS = dict(heads=2, Delta=0.0, D=100, t_max=6.0, log_points=16, seeds=(0, 1, 2))
SIGMAS = 4.0
"""Two Monte Carlo estimates agree within this many combined standard errors."""


@pytest.fixture(scope="module")
def sgd_and_ode():
    """Online SGD of two softmax heads and the SGD ODE from each run's start (module
    docstring)."""
    sgd = bayes_slr.dynamics(method="sgd", N_test=1000, progress=False, **TWO_HEADS)
    ode = bayes_slr.dynamics(method="sgd-ode", ode_draws=2**13, progress=False, **TWO_HEADS)
    return sgd, ode


def test_one_head_is_the_one_head_command():
    """``heads=1, presence=1`` (given or not, and one student head) gives the one-head rows."""
    tiny = dict(D=40, t_max=2.0, N_test=500, log_points=6, seeds=(0,), progress=False)
    before = bayes_slr.dynamics(**tiny)
    given = bayes_slr.dynamics(heads=1, presence=1.0, student_heads=1, **tiny)
    assert all(isinstance(row, DynamicsRow) for row in given.rows + before.rows)
    assert json_text(given.to_json()["rows"]) == json_text(before.to_json()["rows"])
    assert given.rows_table() == before.rows_table()


def test_online_sgd_ends_where_its_ode_ends(sgd_and_ode):
    """Each seed's end error within four combined standard errors (test set, ODE draws) of the
    SGD ODE's from the same start, and their means over the seeds likewise."""
    sgd, ode = sgd_and_ode
    assert all(isinstance(row, HeadsDynamicsRow) for row in sgd.rows + ode.rows)
    for run, limit in zip(sgd.rows, ode.rows, strict=True):
        assert (run.seed, run.method, limit.method) == (limit.seed, "sgd", "sgd-ode")
        combined = math.hypot(run.final_stderr, limit.final_stderr)
        assert abs(run.final_error - limit.final_error) <= SIGMAS * combined, run.seed
    mean = [np.mean([row.final_error for row in result.rows]) for result in (sgd, ode)]
    stderr = [
        math.sqrt(sum(row.final_stderr**2 for row in result.rows)) / len(result.rows)
        for result in (sgd, ode)
    ]
    assert abs(mean[0] - mean[1]) <= SIGMAS * math.hypot(*stderr)


def test_a_row_reads_its_trajectory(sgd_and_ode):
    """The end of each row is its trajectory's last point: the cosine matrices, the matched
    teacher heads (a permutation), stalled exactly when not every head specialised; the
    references are the aligned heads' optimum and the multi-head Bayes error."""
    for result in sgd_and_ode:
        for row in result.rows:
            assert isinstance(row, HeadsDynamicsRow) and row.student_heads == 2
            last = row.trajectory.last
            np.testing.assert_array_equal(row.cosines_k, last.cosines("k"))
            np.testing.assert_array_equal(row.cosines_v, last.cosines("v"))
            read = row.specialisation
            assert sorted(read.permutation) == [0, 1]
            assert row.final_error == last.test_error and row.t_max == pytest.approx(6.0)
            assert read.specialised is all(math.isfinite(t) for t in read.head_times)
            assert row.population_optimum == pytest.approx(row.bayes_error, abs=1e-3)
    assert sgd_and_ode[0].rows[0].steps == 600 and sgd_and_ode[1].rows[0].steps is None


def test_table_frame_and_head_overlap_figure(sgd_and_ode):
    sgd, _ = sgd_and_ode
    table = sgd.rows_table()
    assert len(table.splitlines()) == 2 + len(sgd.rows)
    assert all(column in table for column in ("cos_k", "matched", "specialised_at", "stalled"))
    frame = sgd.trajectories()
    points = sum(len(row.trajectory.points) for row in sgd.rows)
    assert len(frame) == 4 * points and {"student", "teacher", "cos_k"} <= set(frame.columns)
    ax = sgd.plot()
    assert ax.get_xscale() == "log" and len(ax.lines) == 4 * len(sgd.rows) + 1
    plt.close(ax.figure)


def test_the_sweep_log_reads_back_multi_head_rows(tmp_path, capsys, monkeypatch):
    argv = ["dynamics", "--heads", "2", "--presence", "0.5", "--student-heads", "3"]
    argv += ["--D", "12", "--t-max", "1", "--N-test", "200", "--log-points", "4", "--quiet"]
    argv += ["--out", str(tmp_path), "--json"]
    assert main(argv) == 0
    first = json.loads(capsys.readouterr().out)
    (row,) = first["rows"]
    assert row["student_heads"] == 3 and np.shape(row["cosines_k"]) == (3, 2)
    assert row["population_optimum"] is None
    assert row["specialisation"]["permutation"].count(None) == 1
    (logged,) = [
        json.loads(line) for line in (tmp_path / "dynamics.jsonl").read_text().splitlines()
    ]
    assert logged["result"]["kind"] == "heads"  # the log names the row's kind, read by it

    def must_not_run(*args, **kwargs):
        raise AssertionError("a finished point was recomputed")

    monkeypatch.setattr(experiment_module, "dynamics_point", must_not_run)
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["rows"] == first["rows"]


def test_gradient_descent_of_heads_ends_at_a_minimum_the_erm_trainer_confirms():
    """``dynamics --method gd --heads 2`` (softmax, ``D = 8``, ``alpha = 32``, ``lam = 4``, to
    ``t = 1500``, seeds 0 to 3): every run ends stationary to the ERM trainer's stopping rule;
    the trainer's minimum (L-BFGS from GD's end and from random starts) is never above GD's end
    by more than the first-order tolerance. Seed 0 ends at the trainer's minimum
    (``at_minimum``: stationary, the objectives within the tolerance, the test errors within
    two standard errors): L-BFGS from GD's end, already below its stopping rule, does not move
    (measured: distance 5e-15); the others end with the heads alike above a specialised minimum
    that random starts find (section 9's stalled runs, as fixed points of gradient descent). No
    replica number: a warning names the missing equations."""
    from bayes_slr.studies.dynamics_erm import STATIONARITY

    with pytest.warns(UserWarning, match="no replica ERM equations for student heads"):
        result = bayes_slr.dynamics(
            method="gd",
            heads=2,
            Delta=0.1,
            D=8,
            alpha=32.0,
            lam=4.0,
            eta=0.2,
            t_max=1500.0,
            seeds=(0, 1, 2, 3),
            N_test=4000,
            log_points=24,
            progress=False,
        )
    for row in result.rows:
        erm = row.erm
        assert isinstance(row, HeadsDynamicsRow) and erm is not None
        assert erm.gd_grad_norm <= STATIONARITY and erm.lbfgs_converged
        assert erm.objective_gap >= -erm.objective_tolerance
        assert erm.replica_error is None and erm.lbfgs_m_k is None
    first = result.rows[0].erm
    assert first.at_minimum and first.relative_distance <= 1e-9
    assert "lbfgs_error" in result.rows_table()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--method", "gd", "--heads", "2"], "alpha (samples per dimension, > 0) is required"),
        (["--heads", "2", "--start", "teacher"], "start: the multi-head dynamics start at random"),
        (["--heads", "2", "--sphere"], "sphere: the multi-head dynamics are not projected"),
        (["--heads", "3", "--D", "5"], "D must be an integer >= 6 with 3 heads"),
        (["--student-heads", "0"], "student_heads must be an integer >= 1"),
        (["--heads", "0"], "heads must be an integer >= 1"),
        (["--presence", "0"], "presence must be a probability in (0, 1]"),
        (["--presence", "1.5"], "presence must be a probability in (0, 1]"),
    ],
)
def test_bad_inputs_exit_2_with_one_line(capsys, argv, message):
    assert main(["dynamics", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0]

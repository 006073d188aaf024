"""``bayes-slr dynamics --method gd`` against the ERM minimum and the replica theory (issue 21
item 3): where gradient descent ends, beside the multi-start L-BFGS minimum of the same objective
on the same data, and the replica-symmetric error.

Tiny runs (``D = 20``, ``N = 80``, 256 replica draws): what is checked is the comparison the
experiment adds (tests/attention/test_dynamics.py checks GD against SciPy's L-BFGS-B at size).
"""

import json

import pytest

from bayes_slr.cli.main import main
from bayes_slr.experiments.dynamics_view import ERM_COLUMNS
from bayes_slr.studies.dynamics_erm import (
    STATIONARITY,
    replica_warnings,
    settle_index,
)
from bayes_slr.studies.dynamics_records import DynamicsRow

GD = [
    "dynamics",
    "--method",
    "gd",
    "--alpha",
    "4",
    "--lam",
    "1",
    "--D",
    "20",
    "--N-test",
    "2000",
    "--replica-samples",
    "256",
    "--log-points",
    "8",
    "--quiet",
]


def run_rows(capsys, argv) -> list[DynamicsRow]:
    assert main([*argv, "--json"]) == 0
    return [DynamicsRow.from_dict(row) for row in json.loads(capsys.readouterr().out)["rows"]]


def test_converged_gradient_descent_ends_at_the_lbfgs_minimum(capsys):
    """At ``lam = 1`` (a convex basin) GD with ``eta = 0.2`` to ``t = 200`` (1000 steps) contracts
    to machine precision: it is stationary by L-BFGS's own rule, its objective equals the L-BFGS
    minimum within the first-order bound ``max(|grad|) x distance`` that the two gradients allow,
    and its test error equals the minimum's within two combined Monte Carlo standard errors;
    ``--json`` carries the comparison and the replica point."""
    (row,) = run_rows(capsys, [*GD, "--eta", "0.2", "--t-max", "200"])
    erm = row.erm
    assert erm.gd_grad_norm <= STATIONARITY and erm.lbfgs_converged
    assert abs(erm.objective_gap) <= erm.objective_tolerance
    assert erm.gd_objective == pytest.approx(row.trajectory.loss[-1])
    assert abs(row.final_error - erm.lbfgs_error) <= erm.error_tolerance
    assert erm.at_minimum and erm.erm_reach_time is not None
    assert erm.erm_reach_step == round(erm.erm_reach_time / 0.2)
    assert erm.replica_note == "" and 0.0 < erm.replica_error < 1.5 and erm.replica_stderr > 0
    assert erm.replica_replicon < 1.0


def test_a_short_run_is_not_at_the_minimum_and_the_table_shows_the_comparison(capsys):
    """Twenty steps leave GD descending: above the minimum, not stationary, ``at_minimum`` no;
    the table has the comparison's columns, which ``--no-compare-erm`` leaves out."""
    assert main([*GD, "--eta", "0.1", "--t-max", "2"]) == 0
    header = capsys.readouterr().out.splitlines()[0].split()
    assert header[-len(ERM_COLUMNS) :] == list(ERM_COLUMNS)
    (row,) = run_rows(capsys, [*GD, "--eta", "0.1", "--t-max", "2"])
    assert row.erm.objective_gap > 0.0 and not row.erm.at_minimum
    assert row.erm.gd_grad_norm > STATIONARITY
    (plain,) = run_rows(capsys, [*GD, "--eta", "0.1", "--t-max", "2", "--no-compare-erm"])
    assert plain.erm is None
    assert main([*GD, "--eta", "0.1", "--t-max", "2", "--no-compare-erm"]) == 0
    assert "lbfgs_error" not in capsys.readouterr().out


def test_settle_index_and_replica_warnings():
    """The settling point is where the values enter the band for good; the replica warnings name
    each activation once."""
    assert settle_index([1.0, 0.5, 0.9, 0.52, 0.49], 0.5, 0.05) == 3
    assert settle_index([0.5, 0.5], 0.5, 0.0) == 0
    assert settle_index([0.5, 0.7], 0.5, 0.1) is None

    class Erm:
        replica_note = "RS-unstable"

    class Row:
        activation, erm = "linear", Erm()

    assert replica_warnings([Row(), Row()]) == ["linear: replica theory: RS-unstable"]

"""``bayes-slr dynamics`` and ``bayes_slr.dynamics`` (issue 21 item 1): typed rows, the flow from
the teacher at the population optimum, refusals, the resumable folder, the API equal to the
command line, the table and the figure.

Tiny runs (``D = 40``, a few logged points, small test sets and Monte Carlo draws): what is
checked is what the experiment adds to the core (tests/attention/test_dynamics.py,
tests/formulas/test_flow.py check the numbers at size).
"""

import contextlib
import io
import json
import math

import matplotlib.pyplot as plt
import pytest

import bayes_slr
import bayes_slr.experiments.dynamics as dynamics_module
from bayes_slr.cli.main import main
from bayes_slr.errors import ConfigError
from bayes_slr.experiments.dynamics import DynamicsOptions, DynamicsResult
from bayes_slr.records import json_text
from bayes_slr.studies.dynamics_records import POINT_FIELDS, DynamicsRow

SGD = [
    "dynamics",
    "--D",
    "40",
    "--t-max",
    "2",
    "--N-test",
    "500",
    "--log-points",
    "6",
    "--seeds",
    "0",
    "1",
    "--quiet",
]
FLOW_TEACHER = [
    "dynamics",
    "--method",
    "flow",
    "--start",
    "teacher",
    "--t-max",
    "1",
    "--ode-draws",
    "4096",
    "--log-points",
    "5",
    "--quiet",
]


def run_json(capsys, argv):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def sgd_json():
    """The tiny SGD run through the command line, run once (``capsys`` is per test)."""
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main([*SGD, "--json"]) == 0
    return json.loads(buffer.getvalue())


def test_rows_are_typed_and_trajectories_ordered(sgd_json):
    rows = [DynamicsRow.from_dict(row) for row in sgd_json["rows"]]
    assert [(r.activation, r.seed) for r in rows] == [("softmax", 0), ("softmax", 1)]
    assert sgd_json["config"]["steps"] == 80 and sgd_json["config"]["batch"] == 32
    for row in rows:
        steps, times = row.trajectory.step, row.trajectory.time
        assert steps[0] == 0 and steps[-1] == row.steps == 80
        assert all(a < b for a, b in zip(steps, steps[1:], strict=False))
        assert all(a < b for a, b in zip(times, times[1:], strict=False))
        assert math.isclose(times[-1], row.t_max) and math.isclose(row.t_max, 80 * 1.0 / 40)
        lengths = {len(getattr(row.trajectory, name)) for name in POINT_FIELDS}
        assert lengths == {len(steps)}
        assert (
            row.final_error == row.trajectory.test_error[-1] and row.m_k == row.trajectory.m_k[-1]
        )
        # the start is random: m ~ 0.1/sqrt(D) (plus the test-set noise), q_k = 0.01 to 1/sqrt(D)
        assert abs(row.trajectory.q_k[0] - 0.01) < 0.01 and abs(row.trajectory.m_k[0]) < 0.1
        assert row.population_optimum == pytest.approx(row.bayes_error, abs=1e-4)
        assert row.reached is (row.final_error - row.population_optimum <= 0.01)
    assert rows[0].trajectory.m_k != rows[1].trajectory.m_k  # the seeds differ


def test_flow_from_the_teacher_stays_at_the_population_optimum(capsys):
    """Softmax on spiked SLR: the teacher is the population optimum (= Bayes), a fixed point of
    the flow, so the end error is the optimum within the Monte Carlo error of the ODE's terms."""
    (row,) = (DynamicsRow.from_dict(r) for r in run_json(capsys, FLOW_TEACHER)["rows"])
    assert row.steps is None and row.trajectory.step is None
    assert row.trajectory.m_k[0] == pytest.approx(math.sqrt(2.0))
    assert row.m_k == pytest.approx(math.sqrt(2.0), abs=1e-2)
    assert abs(row.final_error - row.population_optimum) < 4 * row.final_stderr + 1e-3
    assert row.reached and row.reach_time == 0.0 and row.escape_time is None


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--steps", "0"], "steps must be an integer >= 1"),
        (["--eta", "0"], "eta must be a number > 0"),
        (["--batch", "0"], "batch must be an integer >= 1"),
        (["--method", "gd"], "alpha (samples per dimension, > 0) is required for method gd"),
        (["--method", "gd", "--alpha", "-1"], "alpha must be a number > 0"),
        (["--alpha", "2"], "alpha and lam apply to method gd only"),
        (["--method", "flow", "--eta", "1"], "eta applies to methods gd, sgd and sgd-ode"),
        (["--method", "flow", "--steps", "5"], "steps applies to methods gd and sgd"),
        (["--steps", "5", "--t-max", "3"], "steps and t_max: give one of them"),
        (["--seeds", "0", "0"], "seeds: each at most once"),
        (["--ode-draws", "3"], "ode_draws must be an even integer >= 2"),
        (["--tolerance", "0"], "tolerance must be a number > 0"),
        (["--method", "sgdd"], "invalid choice"),
    ],
)
def test_bad_inputs_exit_2_with_one_line(capsys, argv, message):
    try:
        code = main(["dynamics", *argv])
    except SystemExit as exc:  # refused by the parser (a choice): the same exit code and line
        code = exc.code
    assert code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0]


def test_out_folder_resumes_without_recomputing(tmp_path, capsys, monkeypatch):
    argv = [*SGD, "--out", str(tmp_path)]
    first = run_json(capsys, argv)
    assert len((tmp_path / "dynamics.jsonl").read_text().splitlines()) == 2

    def must_not_run(*args, **kwargs):
        raise AssertionError("a finished point was recomputed")

    monkeypatch.setattr(dynamics_module, "dynamics_point", must_not_run)
    assert run_json(capsys, argv)["rows"] == first["rows"]
    saved = json.loads((tmp_path / "dynamics.json").read_text())
    assert saved["rows"] == first["rows"] and saved["config"]["seeds"] == [0, 1]

    computed = []
    monkeypatch.undo()
    original = dynamics_module.dynamics_point

    def counted(config, settings, seed, train=None):
        computed.append(seed)
        return original(config, settings, seed, train)

    monkeypatch.setattr(dynamics_module, "dynamics_point", counted)
    seeds_at = SGD.index("--seeds") + 1
    more_seeds = [*SGD[:seeds_at], "0", "1", "2", "--quiet", "--out", str(tmp_path)]
    extended = run_json(capsys, more_seeds)
    assert computed == [2] and extended["rows"][:2] == first["rows"]


def test_api_returns_the_rows_of_the_command_line(sgd_json):
    result = bayes_slr.dynamics(
        D=40, t_max=2.0, N_test=500, log_points=6, seeds=(0, 1), progress=False
    )
    assert isinstance(result, DynamicsResult) and isinstance(result.options, DynamicsOptions)
    assert json.loads(json_text(result.to_json()))["rows"] == sgd_json["rows"]


def test_table_tidy_frame_and_plot(sgd_json):
    result = bayes_slr.dynamics(
        D=40, t_max=2.0, N_test=500, log_points=6, seeds=(0, 1), progress=False
    )
    table = result.rows_table()
    assert "final_error" in table and "reached" in table and len(table.splitlines()) == 4
    assert result.table().startswith(table)
    summary = result.to_pandas()
    assert len(summary) == len(result.rows) and "trajectory" not in summary.columns
    assert list(summary.final_error) == [row.final_error for row in result.rows]
    assert not any("." in column for column in summary.columns)
    frame = result.trajectories()
    assert len(frame) == sum(len(r.trajectory.time) for r in result.rows)
    assert {"activation", "seed", "step", "time", "m_k", "test_error"} <= set(frame.columns)
    ax = result.plot()
    assert ax.get_xscale() == "log" and len(ax.lines) == 2 + 2  # two runs, optimum, Bayes
    plt.close(ax.figure)


def test_options_read_back_from_their_record():
    given = DynamicsOptions(method="sgd", D=40, t_max=2.0)
    assert given.steps is None and given.eta is None and given.batch is None  # kept as given
    options = given.resolved()
    assert DynamicsOptions.from_dict(options.to_dict()) == options == options.resolved()
    assert options.steps == 80 and options.eta == 1.0 and options.batch == 32 and options.nu == 2
    with pytest.raises(ConfigError, match="alpha"):
        DynamicsOptions(method="gd")


def test_gd_runs_on_its_clock_and_a_divergence_stops_the_run(capsys):
    """gd: ``t_max / eta`` steps of full-batch descent; a step size that explodes the loss stops
    the run (exit 3, one line naming the step size; without ``--out`` nothing is kept)."""
    common = ["dynamics", "--method", "gd", "--alpha", "2", "--D", "20", "--N-test", "200"]
    common += ["--no-compare-erm", "--quiet"]  # the comparison has its own tests
    output = run_json(capsys, [*common, "--t-max", "2", "--log-points", "4"])
    (row,) = (DynamicsRow.from_dict(r) for r in output["rows"])
    assert row.steps == 20 and row.trajectory.step[-1] == 20 and row.t_max == pytest.approx(2.0)
    assert (
        main([*common, "--activations", "linear", "softmax", "--eta", "0.6", "--steps", "50"]) == 3
    )
    captured = capsys.readouterr()
    (line,) = captured.err.strip().splitlines()
    assert captured.out == "" and "linear seed 0: gd diverged with step size eta = 0.6" in line
    assert line.endswith("is not kept (give --out a folder to keep it)")

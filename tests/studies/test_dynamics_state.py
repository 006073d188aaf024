"""What ``bayes-slr dynamics --out`` keeps of a point trained on data (issue 21, engineering items):
the last finite iterate of a diverging run, checkpoints that resume an interrupted point to the
uninterrupted trajectory bit for bit, the progress of a point's steps, and the predecessor's
``erf_sphere_<lambda>`` selected by name.

Tiny runs (``D`` 20 to 40, a few logged points, small test sets).
"""

import json
import math

import numpy as np
import pytest

import bayes_slr
import bayes_slr.attention.dynamics as core
from bayes_slr.attention.activations import sphere_erf
from bayes_slr.cli.main import main
from bayes_slr.errors import ConfigError
from bayes_slr.records import json_text
from bayes_slr.studies import dynamics_state
from bayes_slr.studies.dynamics_records import DynamicsRow

DIVERGING = [
    "dynamics",
    "--method",
    "gd",
    "--alpha",
    "2",
    "--D",
    "20",
    "--N-test",
    "200",
    "--activations",
    "linear",
    "--eta",
    "50",
    "--steps",
    "50",
    "--log-points",
    "6",
    "--quiet",
]
SMALL = {"D": 40, "N_test": 300, "log_points": 6, "seeds": (0, 1), "progress": False}
RUNS = {
    "sgd": {"method": "sgd", "t_max": 2.0, **SMALL},
    # compare_erm off: the L-BFGS and replica comparison is not part of a point's checkpoints
    # (tests/experiments/test_dynamics_erm.py covers it) and is most of the cost here
    "gd": {"method": "gd", "alpha": 2.0, "eta": 0.1, "steps": 60, "compare_erm": False, **SMALL},
}


def test_a_divergence_keeps_its_last_finite_iterate_and_nothing_else(tmp_path, capsys):
    out, plot = tmp_path / "runs", tmp_path / "dyn.png"
    assert main([*DIVERGING, "--out", str(out), "--plot", str(plot)]) == 3
    captured = capsys.readouterr()
    kept = out / "dynamics-diverged-linear-seed0.npz"
    (line,) = captured.err.strip().splitlines()
    assert captured.out == ""
    assert line.startswith("bayes-slr dynamics: stopped: linear seed 0: gd diverged with step size")
    assert "eta = 50" in line and line.endswith(f"is kept in {kept}")
    assert sorted(p.name for p in out.iterdir()) == [kept.name] and not plot.exists()
    with np.load(kept) as data:
        assert data["k"].shape == data["v"].shape == (20,)
        numbers = [data[name] for name in ("k", "v", "c", "step", "time", "m_k", "q_k", "loss")]
        assert all(np.all(np.isfinite(x)) for x in numbers)
        assert float(data["time"]) == pytest.approx(50.0 * int(data["step"]))
        points = json.loads(str(data["points"]))
        assert points[-1]["step"] == int(data["step"]) and points[-1]["m_k"] == float(data["m_k"])
        assert float(data["q_k"]) == pytest.approx(float(data["k"] @ data["k"]) / 20)
        assert str(data["message"]) in line


@pytest.mark.parametrize("method", sorted(RUNS))
def test_an_interrupted_point_resumes_to_the_uninterrupted_trajectory(
    tmp_path, monkeypatch, method
):
    """Stop the second point after its third checkpoint (the first point is finished and logged),
    rerun: the point continues from that checkpoint, and every row equals an uninterrupted run's
    bit for bit; no checkpoint is left."""
    settings = RUNS[method]
    whole = bayes_slr.dynamics(**settings)
    saved = dynamics_state.PointState.save
    calls = []

    def save_then_stop(state, checkpoint):
        saved(state, checkpoint)
        calls.append(state.seed)
        if calls.count(1) == 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(dynamics_state.PointState, "save", save_then_stop)
    with pytest.raises(KeyboardInterrupt):
        bayes_slr.dynamics(**settings, out=tmp_path)
    monkeypatch.undo()
    checkpoint = tmp_path / "dynamics-checkpoint-softmax-seed1.npz"
    assert sorted(p.name for p in tmp_path.iterdir()) == [checkpoint.name, "dynamics.jsonl"]

    resumed_from = []
    original = core.train_dynamics

    def spy(run, **kwargs):
        resumed_from.append(kwargs["resume"].step)
        return original(run, **kwargs)

    monkeypatch.setattr(core, "train_dynamics", spy)
    resumed = bayes_slr.dynamics(**settings, out=tmp_path)
    assert resumed_from == [whole.rows[1].trajectory.step[2]]  # only seed 1 ran, from step 3
    assert json_text([r.to_dict() for r in resumed.rows]) == json_text(
        [r.to_dict() for r in whole.rows]
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dynamics.json", "dynamics.jsonl"]


def test_a_checkpoint_of_other_options_is_refused_before_any_work(tmp_path, monkeypatch, capsys):
    saved = dynamics_state.PointState.save

    def save_then_stop(state, checkpoint):
        saved(state, checkpoint)
        raise KeyboardInterrupt

    monkeypatch.setattr(dynamics_state.PointState, "save", save_then_stop)
    with pytest.raises(KeyboardInterrupt):
        bayes_slr.dynamics(**{**RUNS["sgd"], "seeds": (0,)}, out=tmp_path)
    monkeypatch.undo()
    kept = sorted(p.name for p in tmp_path.iterdir())
    assert kept == ["dynamics-checkpoint-softmax-seed0.npz"]
    argv = ["dynamics", "--D", "40", "--t-max", "2", "--N-test", "300", "--log-points", "6"]
    assert main([*argv, "--eta", "0.5", "--quiet", "--out", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    (line,) = captured.err.strip().splitlines()
    assert f"--out: {tmp_path / kept[0]} is the checkpoint of a point this run does not" in line
    assert captured.out == "" and sorted(p.name for p in tmp_path.iterdir()) == kept


def test_progress_counts_the_steps_of_a_point(capsys):
    bayes_slr.dynamics(**{**RUNS["gd"], "seeds": (0,), "progress": True})
    err = capsys.readouterr().err
    assert "softmax seed 0" in err and "/60" in err and "step" in err


def test_erf_sphere_is_selected_by_name(capsys):
    argv = ["dynamics", "--activations", "erf_sphere_0.50", "--D", "40", "--t-max", "1"]
    argv += ["--N-test", "300", "--log-points", "4", "--sphere", "--start", "sphere", "--quiet"]
    assert main([*argv, "--json"]) == 0
    (row,) = (DynamicsRow.from_dict(r) for r in json.loads(capsys.readouterr().out)["rows"])
    assert row.activation == sphere_erf(0.5).name == "erf_sphere_0.5"
    assert all(q == pytest.approx(1.0, abs=1e-12) for q in row.trajectory.q_k)  # the sphere
    assert row.population_optimum is not None and math.isfinite(row.final_error)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["dynamics", "--activations", "erf_sphere_0"], "activations: erf_sphere_<lambda> needs"),
        (["dynamics", "--activations", "erf_sphere_x"], "a finite number > 0; got 'erf_sphere_x'"),
        (["dynamics", "--activations", "relu"], "or erf_sphere_<lambda> with lambda > 0"),
        (["theory", "--activations", "erf_sphere_0.5"], "invalid choice: 'erf_sphere_0.5'"),
        (["gap", "--activations", "erf_sphere_0.5"], "erf_sphere_<lambda> is selectable by name"),
    ],
)
def test_erf_sphere_refusals_name_the_parameter(capsys, argv, message):
    try:
        code = main(argv)
    except SystemExit as exc:  # refused by the parser (a choice)
        code = exc.code
    captured = capsys.readouterr()
    (line,) = captured.err.strip().splitlines()
    assert code == 2 and captured.out == "" and message in line


def test_theory_refuses_erf_sphere_through_the_api():
    with pytest.raises(ConfigError, match="activations must be one of softmax"):
        bayes_slr.theory(activations=("erf_sphere_0.5",))

"""``bayes-slr gap`` and :func:`bayes_slr.experiments.gap.gap_sweep`: the paper's population claims,
resumable sweeps, refusals.

The population values come from quadrature (bound ~1e-7) and SciPy optimisation;
``OPT_TOL`` is the optimiser's tolerance on the error, the only slack in these checks.
"""

import json
import math

import pytest

import bayes_slr.experiments.gap as gap_module
from bayes_slr.cli.common import default_text
from bayes_slr.cli.main import main
from bayes_slr.experiments.gap import gap_sweep
from bayes_slr.records import SweepLog

OPT_TOL = 1e-4


def run_json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def spiked_rows():
    return gap_sweep([("spiked", 2.0)], [2, 5, 20], progress=False)


def test_softmax_reaches_bayes_and_others_fall_short(spiked_rows):
    for row in spiked_rows:
        assert abs(row["gap"]["softmax"]) < OPT_TOL
        assert row["gap"]["linear"] > 10 * OPT_TOL
        for activation in ("erf", "softplus"):
            assert -OPT_TOL < row["gap"][activation] < row["gap"]["linear"] + OPT_TOL


def test_bayes_error_grows_with_length(spiked_rows):
    bayes = [row["bayes"] for row in spiked_rows]
    assert bayes == sorted(bayes) and 0 < bayes[0] < bayes[-1] < 1


def test_max_slr_linear_error_tends_to_one_while_bayes_is_zero(capsys):
    result = run_json(
        capsys,
        [
            "gap",
            "--variant",
            "max",
            "--L",
            "2",
            "10",
            "100",
            "--activations",
            "softmax",
            "linear",
            "--json",
        ],
    )
    rows = result["rows"]
    linear = [row["population"]["linear"] for row in rows]
    assert linear == sorted(linear) and linear[-1] > 0.9
    for row in rows:
        assert row["bayes"] == 0.0 and row["nu"] == "inf"
        assert row["population"]["softmax"] < OPT_TOL


def test_variable_length_hurts_linear_but_not_softmax():
    """One (k, v) must serve every length: min of the average >= average of the minima, strictly for
    linear.
    """
    Lbar = 5
    variable = gap_sweep(
        [("spiked", 2.0)],
        [Lbar],
        variable_length=True,
        activations=("softmax", "linear"),
        progress=False,
    )[0]
    fixed = gap_sweep(
        [("spiked", 2.0)], range(1, Lbar + 1), activations=("softmax", "linear"), progress=False
    )
    averaged = {a: sum(row["population"][a] for row in fixed) / Lbar for a in ("softmax", "linear")}
    assert variable["bayes"] == pytest.approx(sum(row["bayes"] for row in fixed) / Lbar, abs=1e-6)
    assert abs(variable["gap"]["softmax"]) < OPT_TOL
    assert variable["population"]["softmax"] == pytest.approx(averaged["softmax"], abs=OPT_TOL)
    assert variable["population"]["linear"] > averaged["linear"] + 10 * OPT_TOL


def test_out_folder_resumes_without_recomputing(tmp_path, capsys, monkeypatch):
    argv = [
        "gap",
        "--variant",
        "spiked",
        "--nu",
        "1",
        "--L",
        "2",
        "3",
        "--activations",
        "linear",
        "--out",
        str(tmp_path),
        "--json",
    ]
    first = run_json(capsys, argv)
    lines = (tmp_path / "gap.jsonl").read_text().splitlines()
    assert len(lines) == 4  # (bayes + linear) x 2 lengths
    record = json.loads(lines[0])["provenance"]
    assert {"config", "seed", "versions"} <= set(record)

    def must_not_run(*args, **kwargs):
        raise AssertionError("a finished point was recomputed")

    monkeypatch.setattr(gap_module, "bayes_point", must_not_run)
    monkeypatch.setattr(gap_module, "population_point", must_not_run)
    assert run_json(capsys, argv)["rows"] == first["rows"]
    saved = json.loads((tmp_path / "gap.json").read_text())
    assert saved["config"]["L"] == [2, 3] and "versions" in saved


def test_interrupted_sweep_keeps_finished_points(tmp_path, monkeypatch):
    log = SweepLog(tmp_path / "gap.jsonl")
    calls = []
    real = gap_module.population_point

    def fail_on_second_length(config, activation):
        calls.append(config.Lbar)
        if config.Lbar == 3 and len(calls) < 3:
            raise KeyboardInterrupt
        return real(config, activation)

    monkeypatch.setattr(gap_module, "population_point", fail_on_second_length)
    with pytest.raises(KeyboardInterrupt):
        gap_sweep([("spiked", 1.0)], [2, 3], activations=("linear",), log=log, progress=False)
    rows = gap_sweep(
        [("spiked", 1.0)],
        [2, 3],
        activations=("linear",),
        log=SweepLog(tmp_path / "gap.jsonl"),
        progress=False,
    )
    assert calls == [2, 3, 3] and len(rows) == 2


def test_plot_is_written(tmp_path, capsys):
    plot = tmp_path / "gap.png"
    assert (
        main(
            [
                "gap",
                "--variant",
                "spiked",
                "--L",
                "2",
                "4",
                "--activations",
                "linear",
                "--plot",
                str(plot),
            ]
        )
        == 0
    )
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "linear" in capsys.readouterr().out


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--activations", "relu"], "activation must be one of softmax, linear, erf, softplus"),
        (["--alpha", "0"], "alpha must be a number > 0"),
        (["--alpha", "2", "--lam", "-1"], "lam must be a number >= 0"),
        (["--alpha", "2", "--D", "0"], "D must be an integer >= 1"),
        (["--alpha", "2", "--seeds", "0"], "seeds must be an integer >= 1"),
        (["--L", "0"], "L must be an integer >= 1"),
        (["--nu", "-1"], "nu must be a number >= 0"),
    ],
)
def test_bad_input_is_refused_and_nothing_written(tmp_path, capsys, extra, message):
    out = tmp_path / "sweep"
    plot = tmp_path / "gap.png"
    argv = [
        "gap",
        "--variant",
        "spiked",
        "--L",
        "2",
        "--out",
        str(out),
        "--plot",
        str(plot),
    ] + extra
    assert main(argv) == 2
    assert message in capsys.readouterr().err
    assert not out.exists() and not plot.exists()


@pytest.mark.slow
def test_erm_columns_sit_above_population(capsys, full_size):
    D, alpha, seeds = (100, 16, 4) if full_size else (24, 8, 2)
    argv = [
        "gap",
        "--variant",
        "spiked",
        "--nu",
        "2",
        "--L",
        "3",
        "--activations",
        "softmax",
        "linear",
        "--alpha",
        str(alpha),
        "--D",
        str(D),
        "--seeds",
        str(seeds),
        "--json",
    ]
    row = run_json(capsys, argv)["rows"][0]
    for activation in ("softmax", "linear"):
        erm = row["erm"][activation]
        assert erm["stderr"] > 0
        # finite data cannot beat the population optimum beyond the Monte Carlo error
        assert erm["test_error"] > row["population"][activation] - 4 * erm["stderr"]
    assert not math.isnan(row["erm"]["softmax"]["test_error"])


def _gap_parser():
    from bayes_slr.cli.main import build_parser

    parser = build_parser()
    subparsers = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return subparsers.choices["gap"]


def test_help_states_the_defaults_that_run(monkeypatch):
    """Every ``(default: ...)`` in ``gap --help`` is the value the run receives."""
    import bayes_slr.cli.gap as cli_gap

    class Captured(Exception):
        pass

    seen = {}

    def capture(settings, lengths, **kwargs):
        seen.update(kwargs, lengths=lengths)
        raise Captured

    monkeypatch.setattr(cli_gap, "gap_sweep", capture)
    with pytest.raises(Captured):
        main(["gap", "--variant", "spiked", "--alpha", "2"])
    erm = seen["erm"]
    parser = _gap_parser()
    text = " ".join(parser.format_help().split())
    used = {
        "lam": erm.lam,
        "D": erm.D,
        "Delta": erm.Delta,
        "seeds": erm.seeds,
        "starts": erm.starts,
        "init": erm.init,
        "optimizer": erm.optimizer,
        "seed": seen["seed"],
        "L": seen["lengths"],
    }
    for action in parser._actions:
        name = action.option_strings[-1].lstrip("-") if action.option_strings else None
        if name in used:
            assert action.default == used[name], name
            assert f"(default: {default_text(used[name])})" in text, name
    assert erm.lam == "auto" and erm.Delta == 0.0


def test_delta_reaches_the_erm_training_data(monkeypatch):
    calls = []

    def fake_experiment(config, activation, **kwargs):
        calls.append(config)
        raise KeyboardInterrupt

    monkeypatch.setattr(gap_module, "erm_experiment", fake_experiment)
    with pytest.raises(KeyboardInterrupt):
        gap_module.erm_point(
            gap_module.task_config("spiked", 2.0, 3, False),
            "linear",
            gap_module.ERMOptions(alpha=2.0, Delta=0.25, D=7),
            0,
        )
    assert calls[0].Delta == 0.25 and calls[0].D == 7


def test_rerun_with_plot_and_out_updates_the_plot(tmp_path, capsys):
    plot, out = tmp_path / "gap.png", tmp_path / "run"
    argv = [
        "gap",
        "--variant",
        "spiked",
        "--L",
        "2",
        "3",
        "--activations",
        "linear",
        "--out",
        str(out),
        "--plot",
        str(plot),
    ]
    assert main(argv) == 0
    plot.write_bytes(b"stale")
    assert main(argv) == 0  # the plot is derived from the log: redrawn, not refused
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (
        main(
            [
                "gap",
                "--variant",
                "spiked",
                "--L",
                "2",
                "--activations",
                "linear",
                "--plot",
                str(plot),
            ]
        )
        == 2
    )
    assert "exists" in capsys.readouterr().err  # without --out an existing file is still protected


def test_max_inf_notes_are_printed_and_in_json(capsys):
    argv = ["gap", "--variant", "max", "--L", "3", "--activations", "softmax", "softplus"]
    result = run_json(capsys, argv + ["--json"])
    notes = result["notes"]
    assert any("population softmax is a limit" in n for n in notes)
    assert any("population softplus is a limit" in n for n in notes)
    assert result["warnings"] == [] and result["rows"][0]["notes"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "note: max nu=inf L=3: population softplus is a limit" in printed


def test_erm_row_notes_flag_disagreeing_starts_and_the_zero_predictor():
    row = {
        "population": {"linear": 0.9},
        "optimal_overlaps": {"linear": {"note": ""}},
        "erm": {
            "linear": {
                "test_error": 1.08,
                "stderr": 0.01,
                "lam": [10.0, 3.0],
                "lam_auto": True,
                "zero_error": 1.02,
                "excess_over_zero": 0.06,
                "excess_over_zero_stderr": 0.01,
                "notes": ["random starts disagree at 1 of 2 seeds"],
            }
        },
    }
    notes, warnings = gap_module.row_notes(row, ("linear",))
    assert notes == ["ERM linear: lam chosen by held-out validation per seed: 10, 3"]
    assert warnings[0] == "ERM linear: random starts disagree at 1 of 2 seeds"
    assert (
        "above the zero predictor's 1.02" in warnings[1]
        and "population optimum is 0.9" in warnings[1]
    )
    row["erm"]["linear"]["excess_over_zero"] = 0.01  # within two standard errors: no warning
    assert len(gap_module.row_notes(row, ("linear",))[1]) == 1

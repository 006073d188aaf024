"""What every command shares: flags and help made from the options, one-line errors, --version,
outputs checked before any work, file modes, interrupted sweeps, the JSON provenance."""

from __future__ import annotations

import json
import os
import re
import stat

import pytest

from bayes_slr import __version__
from bayes_slr.cli.main import build_parser, main
from bayes_slr.experiments import EXPERIMENTS
from bayes_slr.experiments.base import option_spec
from bayes_slr.records import SweepInterrupted, SweepLog, atomic_write, run_sweep

CONVERTED = sorted(e.name for e in EXPERIMENTS.items())


def _help(command: str) -> str:
    parser, _ = build_parser()
    subparsers = next(a for a in parser._actions if a.dest == "command")
    return re.sub(r"\s+", " ", subparsers.choices[command].format_help())


@pytest.mark.parametrize("command", CONVERTED)
def test_help_states_the_default_that_runs(command):
    """Each option's help states the default its options class runs with (one declaration)."""
    experiment = EXPERIMENTS.get(command)
    text = _help(command)
    for field in experiment.options_type.option_fields():
        spec = option_spec(field)
        if not spec.cli or field.default is False:
            continue
        stated = f"(default: {spec.stated_default(field.default)})"
        assert stated in text, f"{command} --{field.name}: its help does not say {stated}"


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"bayes-slr {__version__}"


@pytest.mark.parametrize(
    "argv",
    [["bayes-risk", "--nu", "nan"], ["simulate", "--D", "two"], ["theory", "--alpha", "x"]],
)
def test_unparsable_value_is_one_line_naming_the_argument(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert f"bayes-slr {argv[0]}: error: argument {argv[1]}" in err


def test_an_old_flag_name_still_works_with_a_notice(capsys):
    assert main(["bayes-risk", "--samples", "10", "--method", "mc", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "--samples is now --mc-sequences" in err and len(err.strip().splitlines()) == 1


@pytest.fixture
def no_work(monkeypatch):
    """Every experiment's ``solve`` fails the test if it is called."""
    for experiment in EXPERIMENTS.items():

        def refuse(*args, name=experiment.name, **kwargs):
            raise AssertionError(f"{name} computed before refusing its output")

        monkeypatch.setattr(type(experiment), "solve", refuse)


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["bayes-risk", "--plot", "/proc/x.png"],
            "--plot: cannot write in folder /proc (its file system does not accept new files)",
        ),
        (["bayes-risk", "--out", "/proc/riskout"], "--out: cannot create folder /proc/riskout"),
        (["theory", "--plot", "{tmp}/afile/x.png"], "--plot: {tmp}/afile is not a folder"),
        (["theory", "--out", "{tmp}/afile/sub"], "--out: cannot create folder {tmp}/afile/sub"),
        (["simulate", "--out", "{tmp}/old.npz"], "--out: {tmp}/old.npz exists; set --force"),
        (["amp", "--out", "{tmp}/afile", "--D", "50"], "--out: {tmp}/afile is a file"),
    ],
)
def test_unwritable_outputs_are_refused_before_any_work(argv, message, tmp_path, capsys, no_work):
    (tmp_path / "afile").write_text("not a folder")
    (tmp_path / "old.npz").write_text("an earlier data set")
    argv = [word.format(tmp=tmp_path) for word in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message.format(tmp=tmp_path) in err and err.count("\n") == 1 and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile", "old.npz"]


def test_written_files_get_the_users_usual_mode(tmp_path):
    previous = os.umask(0o022)
    try:
        path = atomic_write(tmp_path / "out.txt", lambda tmp: tmp.write_text("x"))
    finally:
        os.umask(previous)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_interrupted_sweep_keeps_finished_points_and_says_how_to_resume(tmp_path):
    log = SweepLog(tmp_path / "sweep.jsonl")
    points = [{"i": i} for i in range(4)]

    def solve(point):
        if point["i"] == 2:
            raise KeyboardInterrupt
        return {"value": point["i"] ** 2}

    with pytest.raises(SweepInterrupted, match=r"2 of 4 points finished, kept in .*sweep.jsonl"):
        run_sweep(points, solve, log=log, progress=False)
    done, failures = run_sweep(
        points,
        lambda p: {"value": p["i"] ** 2},
        log=SweepLog(tmp_path / "sweep.jsonl"),
        progress=False,
    )
    assert [result["value"] for _, result in done] == [0, 1, 4, 9] and failures == []


def test_a_sweep_interrupted_before_any_point_says_nothing_was_kept(tmp_path):
    def solve(point):
        raise KeyboardInterrupt

    with pytest.raises(SweepInterrupted, match=r"0 of 2 points finished, nothing kept$"):
        run_sweep([{"i": 0}, {"i": 1}], solve, log=SweepLog(tmp_path / "s.jsonl"), progress=False)


CHEAP = {
    "bayes-risk": ["--L", "2"],
    "phase": ["--Delta", "0.01", "--tol", "1e-3", "--scan", "9"],
    "theory": ["--activations", "linear", "--alpha", "2", "--channel-draws", "64"],
    "simulate": ["--N", "1", "--D", "4"],
    "amp": [
        "--D",
        "50",
        "--alpha",
        "1",
        "--N-test",
        "100",
        "--se-draws",
        "64",
        "--max-iter",
        "5",
    ],
}
PROVENANCE = {
    "experiment",
    "seed",
    "versions",
    "device",
    "created",
    "error_convention",
    "config",
    "rows",
    "notes",
    "warnings",
    "failures",
}


@pytest.mark.parametrize("command", sorted(CHEAP))
def test_every_json_output_carries_provenance_and_standard_numbers(command, capsys):
    """Versions, time, seed, the full options and the error convention; standard JSON only (no
    NaN or Infinity tokens); ``nu`` a number."""
    assert main([command, *CHEAP[command], "--json", "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "NaN" not in text and "Infinity" not in text
    output = json.loads(text)
    assert PROVENANCE <= set(output) and output["experiment"] == command
    assert "excess test error" in output["error_convention"]
    nu = output["config"]["nu"]
    assert all(isinstance(x, float) for x in (nu if isinstance(nu, list) else [nu]))

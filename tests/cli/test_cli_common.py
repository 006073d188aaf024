"""What every command shares: help that states the defaults used, one-line errors, --version, file
modes, sweeps.
"""

from __future__ import annotations

import argparse
import os
import re
import stat

import pytest

from bayes_slr import __version__
from bayes_slr.cli.common import default_text
from bayes_slr.cli.main import build_parser, main
from bayes_slr.records import SweepInterrupted, SweepLog, atomic_write, run_sweep

REQUIRED = {"posterior-sweep": ["--alpha", "1"]}


def _subparsers():
    parser = build_parser()
    action = next(a for a in parser._actions if a.dest == "command")
    return action.choices


@pytest.mark.parametrize("command", sorted(_subparsers()))
def test_help_states_the_default_that_runs(command):
    subparser = _subparsers()[command]
    defaults = vars(subparser.parse_args(REQUIRED.get(command, [])))
    for action in subparser._actions:
        flag = isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction))
        if not action.option_strings or flag or action.default is None or action.dest == "help":
            continue
        text = re.sub(r"\s+", " ", subparser._get_formatter()._format_action(action))
        stated = f"(default: {default_text(defaults[action.dest])})"
        assert stated in text, (
            f"{command} {action.option_strings[0]}: its help does not say {stated}"
        )


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert (
        exit_info.value.code == 0 and capsys.readouterr().out.strip() == f"bayes-slr {__version__}"
    )


@pytest.mark.parametrize(
    "argv", [["bayes-risk", "--nu", "nan"], ["simulate", "--D", "two"], ["gap", "--L", "x"]]
)
def test_unparsable_value_is_one_line_naming_the_argument(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    err = capsys.readouterr().err.strip()
    assert (
        exit_info.value.code == 2
        and len(err.splitlines()) == 1
        and f"bayes-slr {argv[0]}: error: argument {argv[1]}" in err
    )


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

    with pytest.raises(
        SweepInterrupted,
        match=r"2 of 4 points finished, kept in .*sweep.jsonl; re-run the same command",
    ):
        run_sweep(points, solve, log=log, progress=False)
    done = run_sweep(
        points,
        lambda point: {"value": point["i"] ** 2},
        log=SweepLog(tmp_path / "sweep.jsonl"),
        progress=False,
    )
    assert [result["value"] for _, result in done] == [0, 1, 4, 9]


def test_explicit_options_are_the_typed_ones():
    """What --data runs compare with the file: only options typed (abbreviated, ``=value`` or
    flags), never defaults.
    """
    from bayes_slr.cli.main import explicit_options

    assert explicit_options(
        ["posterior", "--D", "3", "--nu=2", "--Del", "0.1", "--no-erm", "--variable-length"]
    ) == {"D", "nu", "Delta", "erm", "variable_length"}
    assert explicit_options(["gap", "--L", "3", "5"]) == {"L"}

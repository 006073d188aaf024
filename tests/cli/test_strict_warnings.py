"""Warnings a script can act on: ``--strict`` on the command line (exit 4 after the output is
written) and ``BAYES_SLR_WARNINGS`` or ``warnings.filterwarnings`` in a Python script.

The warning is GAMP's "did not converge" after one iteration (a residual of order 1, far above
the tolerance 1e-6: ``test_cli_warnings.test_amp_not_converged``), the cheapest warning found.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import pytest

from bayes_slr.cli.main import STRICT_EXIT, main
from bayes_slr.warning_categories import (
    AccuracyWarning,
    BayesSLRWarning,
    ConvergenceWarning,
    filter_from_environment,
)

AMP_ONE_ITERATION = ["amp", "--variant", "spiked", "--nu", "2", "--L", "3", "--D", "50"]
AMP_ONE_ITERATION += ["--alpha", "2", "--max-iter", "1", "--n-test", "200"]
AMP_ONE_ITERATION += ["--no-state-evolution", "--quiet"]

SCRIPT = """
import warnings, bayes_slr
{setup}
bayes_slr.amp(variant="spiked", nu=2, L=3, D=50, alpha=2, max_iter=1, N_test=200,
              state_evolution=False, out={out!r}, progress=False)
print("script went on")
"""


def test_strict_exits_4_after_writing_its_output(capsys, tmp_path):
    assert main([*AMP_ONE_ITERATION, "--out", str(tmp_path), "--strict", "--json"]) == STRICT_EXIT
    captured = capsys.readouterr()
    printed = json.loads(captured.out)
    assert any("did not converge" in warning for warning in printed["warnings"])
    assert "--strict" in captured.err
    assert json.loads((tmp_path / "amp.json").read_text())["warnings"] == printed["warnings"]
    assert main([*AMP_ONE_ITERATION, "--out", str(tmp_path)]) == 0  # without: exit 0


def run_script(tmp_path, setup: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    out = tmp_path / "out"
    code = SCRIPT.format(setup=setup, out=str(out))
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=600,
    )


@pytest.mark.parametrize(
    ("setup", "env"),
    [
        ('warnings.filterwarnings("error", category=bayes_slr.ConvergenceWarning)', {}),
        ("", {"BAYES_SLR_WARNINGS": "error"}),
        ("", {"BAYES_SLR_WARNINGS": "ignore:AccuracyWarning,error:ConvergenceWarning"}),
    ],
)
def test_a_script_fails_on_the_warning_after_the_output_is_written(tmp_path, setup, env):
    done = run_script(tmp_path, setup, env)
    assert done.returncode == 1, done.stderr
    assert "bayes_slr.warning_categories.ConvergenceWarning" in done.stderr.splitlines()[-1]
    assert "script went on" not in done.stdout
    assert (tmp_path / "out" / "amp.json").is_file()


def test_the_variable_ignoring_lets_the_script_go_on(tmp_path):
    done = run_script(tmp_path, "", {"BAYES_SLR_WARNINGS": "ignore"})
    assert done.returncode == 0, done.stderr
    assert "script went on" in done.stdout
    assert "ConvergenceWarning" not in done.stderr


def test_later_entries_take_precedence_and_bad_entries_are_named():
    with warnings.catch_warnings():
        warnings.resetwarnings()
        filter_from_environment("error,ignore:AccuracyWarning")
        warnings.warn("few draws", AccuracyWarning)  # ignored: the later entry
        with pytest.raises(ConvergenceWarning):
            warnings.warn("not converged", ConvergenceWarning)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        filter_from_environment("fail,error:NoSuchWarning")
        warnings.warn("kept", BayesSLRWarning)
    messages = [str(w.message) for w in caught]
    assert any("'fail' ignored" in m for m in messages)
    assert any("'error:NoSuchWarning' ignored" in m for m in messages)
    assert "kept" in messages  # the bad entries set no filter

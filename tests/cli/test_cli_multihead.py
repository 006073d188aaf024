"""Multi-head options on the command line (docs/multihead.md): ``bayes-risk`` and ``simulate``
take ``--heads`` and ``--presence``; a bad value, the max law without a head, and multi-head
data given to a command that reads data are refused with one line and exit 2."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bayes_slr import LengthLaw, SLRConfig
from bayes_slr.cli.main import main
from bayes_slr.formulas.bayes import presence_bayes_error_exact


def test_bayes_risk_rows_carry_the_heads_and_the_exact_multi_head_error(capsys):
    argv = ["bayes-risk", "--L", "3", "--nu", "2", "--heads", "2", "--presence", "0.5"]
    assert main([*argv, "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["rows"]
    config = SLRConfig("spiked", 1, LengthLaw.fixed(3), 2.0, heads=2, presence=0.5)
    exact = presence_bayes_error_exact(config)
    assert (row["heads"], row["presence"]) == (2, 0.5)
    assert (row["bayes_error"], row["stderr"]) == (exact.value, exact.error_bound)
    assert main(argv) == 0
    assert "presence" in capsys.readouterr().out.splitlines()[0]


def test_one_head_table_has_no_head_columns(capsys):
    assert main(["bayes-risk", "--L", "3", "--nu", "1"]) == 0
    assert "presence" not in capsys.readouterr().out


def test_simulate_writes_a_head_axis(tmp_path, capsys):
    out = tmp_path / "heads.npz"
    argv = ["simulate", "--heads", "2", "--presence", "0.5", "--N", "40", "--D", "8"]
    assert main([*argv, "--exact-teacher", "--out", str(out)]) == 0
    with np.load(out) as data:
        assert data["eps"].shape == (40, 2) and data["present"].shape == (40, 2)
        assert data["chi_star"].shape == (40, 2, 3) and data["k_star"].shape == (2, 8)
        record = json.loads(str(data["config"]))["config"]
    assert (record["heads"], record["presence"]) == (2, 0.5)
    capsys.readouterr()
    small = ["--chains", "2", "--warmup", "20", "--samples", "20", "--max-draws", "20"]
    small += ["--no-erm", "--no-check-start"]
    assert main(["posterior", "--data", str(out), *small, "--N-test", "200"]) == 0
    assert "heads 2, presence 0.5" in capsys.readouterr().out  # the file's task


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["bayes-risk", "--presence", "0"], "presence must be a probability in (0, 1]"),
        (["bayes-risk", "--presence", "1.01"], "presence must be a probability in (0, 1]"),
        (["simulate", "--heads", "0"], "heads must be an integer >= 1"),
        (["bayes-risk", "--variant", "max", "--presence", "0.5"], "presence must be 1 for the max"),
        (["simulate", "--heads", "3", "--D", "5", "--exact-teacher"], "D must be an integer >= 6"),
    ],
)
def test_bad_multi_head_input_is_one_line_and_exit_2(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err

"""``bayes-slr bayes-risk`` run in-process: JSON, table, plot, bad input.

The console-script entry point itself is exercised by ``test_cli_simulate.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import jax
import pytest

from bayes_slr import LengthLaw, SLRConfig
from bayes_slr.cli.main import main
from bayes_slr.formulas.bayes import bayes_error_exact
from bayes_slr.inference.bayes_risk import bayes_risk_mc

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
MC_SAMPLES = 2**16  # as in test_bayes_risk.py: the compiled Monte Carlo loop is shared


def _run_json(capsys: pytest.CaptureFixture, *argv: str) -> dict:
    assert main(["bayes-risk", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_exact_json_has_one_row_per_pair(capsys: pytest.CaptureFixture) -> None:
    result = _run_json(capsys, "--variant", "spiked", "--L", "3", "5", "--nu", "0", "1")
    assert result["config"] == {
        "variant": "spiked",
        "variable_length": False,
        "L": [3, 5],
        "nu": [0.0, 1.0],
        "heads": 1,
        "presence": 1.0,
        "method": "exact",
        "mc_sequences": 100_000,
        "seed": 0,
    }
    assert {"seed", "versions", "device", "created", "error_convention"} <= set(result)
    rows = result["rows"]
    assert [(row["L"], row["nu"]) for row in rows] == [(3, 0.0), (3, 1.0), (5, 0.0), (5, 1.0)]
    for row in rows:
        exact = bayes_error_exact(SLRConfig("spiked", 1, LengthLaw.fixed(row["L"]), row["nu"]))
        assert row["bayes_error"] == exact.value and row["stderr"] == exact.error_bound
        assert row["method"] == "exact" and row["variable_length"] is False
    assert abs(rows[0]["bayes_error"] - 2 / 3) <= rows[0]["stderr"]  # nu = 0: 1 - 1/L


def test_monte_carlo_json_matches_library_and_exact(capsys: pytest.CaptureFixture) -> None:
    rows = _run_json(
        capsys,
        "--L",
        "3",
        "--nu",
        "1",
        "--method",
        "mc",
        "--mc-sequences",
        str(MC_SAMPLES),
        "--seed",
        "5",
    )["rows"]
    config = SLRConfig("spiked", 1, LengthLaw.fixed(3), 1.0)
    library = bayes_risk_mc(config, MC_SAMPLES, jax.random.PRNGKey(5)).bayes_error
    assert (
        rows[0]["bayes_error"] == float(library.mean)
        and rows[0]["stderr"] == float(library.stderr) > 0
    )
    assert abs(rows[0]["bayes_error"] - bayes_error_exact(config).value) <= 4 * rows[0]["stderr"]


def test_max_variable_length_with_infinite_nu(capsys: pytest.CaptureFixture) -> None:
    rows = _run_json(
        capsys, "--variant", "max", "--L", "4", "--variable-length", "--nu", "1.5", "inf"
    )["rows"]
    assert rows[1]["nu"] == float("inf") and rows[1]["bayes_error"] == 0.0  # location = argmax
    assert rows[0]["variable_length"] is True
    law = SLRConfig("max", 1, LengthLaw.uniform(4), 1.5)
    assert rows[0]["bayes_error"] == bayes_error_exact(law).value


def test_table_and_plot(capsys: pytest.CaptureFixture, tmp_path: Path) -> None:
    plot = tmp_path / "bayes.png"
    argv = [
        "bayes-risk",
        "--variant",
        "max",
        "--L",
        "4",
        "--variable-length",
        "--nu",
        "0",
        "1.5",
        "inf",
        "--plot",
        str(plot),
    ]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == [
        "variant",
        "L",
        "variable_length",
        "nu",
        "bayes_error",
        "bound",  # the exact method's quadrature bound, not a standard error
        "method",
    ]
    assert [line.split()[3] for line in lines[2:5]] == ["0", "1.5", "inf"]
    assert float(lines[2].split()[4]) == pytest.approx(
        1 - (1 + 1 / 2 + 1 / 3 + 1 / 4) / 4, abs=1e-6
    )
    assert plot.read_bytes().startswith(PNG_MAGIC)
    before = plot.read_bytes()
    assert main(argv) == 2  # refuses to overwrite
    assert "exists" in capsys.readouterr().err and plot.read_bytes() == before
    assert main([*argv, "--force"]) == 0
    assert plot.read_bytes().startswith(PNG_MAGIC)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--L", "0"], "L must be an integer >= 1"),
        (["--nu", "1", "-1"], "nu must be a number >= 0"),
        (["--nu", "inf"], "inf is allowed for max only"),
        (["--method", "mc", "--mc-sequences", "1"], "mc_sequences must be an integer >= 2"),
        (["--variant", "uniform"], "invalid choice: 'uniform'"),
        (["--nu", "one"], "expected a number, got 'one'"),
        (["--L", "3.5"], "expected an integer, got '3.5'"),
        (["--method", "quadrature"], "invalid choice: 'quadrature'"),
    ],
)
def test_bad_input_exits_2_with_one_message_and_no_file(
    capsys: pytest.CaptureFixture, tmp_path: Path, argv: list[str], message: str
) -> None:
    plot = tmp_path / "never.png"
    try:
        code = main(["bayes-risk", *argv, "--plot", str(plot)])
    except SystemExit as exc:  # argparse rejects malformed values itself
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2
    assert message in err and "Traceback" not in err
    assert err.count("error:") == 1 and "bayes-slr bayes-risk: error:" in err
    assert not plot.exists() and not list(tmp_path.iterdir())

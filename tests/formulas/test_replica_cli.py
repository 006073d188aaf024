"""The ``theory`` command over the replica points: JSON, resuming, simulated rows, bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bayes_slr.cli.main import main


def test_cli_json_and_resume(tmp_path, capsys):
    """--json prints config and rows; a second run with --out reads the finished points back.
    The points on 512 draws in 4 scramblings, the task of the golden ``theory_small``: the linear
    replica tests' and that command's programs."""
    argv = [
        "theory",
        "--nu",
        "2",
        "--L",
        "3",
        "--Delta",
        "0.1",
        "--activation",
        "linear",
        "--alpha",
        "4",
        "--bayes",
        "--mc-samples",
        "512",
        "--replicates",
        "4",
        "--json",
        "--out",
        str(tmp_path / "run"),
    ]
    assert main(argv) == 0
    first = json.loads(capsys.readouterr().out)
    theory = [r for r in first["rows"] if r["source"] == "theory"]
    assert [r["estimator"] for r in theory] == ["linear", "bayes", "amp"]
    assert all(r["alpha"] == 4.0 for r in theory)
    assert main(argv) == 0
    second = json.loads(capsys.readouterr().out)
    assert second["rows"] == first["rows"]
    # linear, bayes, amp, and the population values of linear and bayes
    assert len((tmp_path / "run" / "theory.jsonl").read_text().splitlines()) == 5


def test_cli_simulate_adds_lbfgs_rows_at_fixed_size(tmp_path, capsys):
    """--simulate SIZE pairs every ERM theory point with an L-BFGS row at D = SIZE / sqrt(alpha);
    --plot draws both. The theory on 512 points in 4 scramblings: the replica tests' programs.
    """
    argv = [
        "theory",
        "--nu",
        "2",
        "--L",
        "3",
        "--activation",
        "softmax",
        "--alpha",
        "4",
        "--lam",
        "1",
        "--mc-samples",
        "512",
        "--replicates",
        "4",
        "--simulate",
        "30",
        "--seeds",
        "2",
        "--json",
        "--plot",
        str(tmp_path / "p.png"),
    ]
    assert main(argv) == 0
    assert (tmp_path / "p.png").read_bytes().startswith(b"\x89PNG")
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [r["source"] for r in rows if r["source"] != "population"] == ["theory", "simulation"]
    simulation = next(r for r in rows if r["source"] == "simulation")
    simulated = simulation["diagnostics"]
    assert (simulated["D"], simulated["N"], len(simulated["per_seed_test_error"])) == (15, 60, 2)
    assert simulation["test_error"] == pytest.approx(np.mean(simulated["per_seed_test_error"]))


@pytest.mark.parametrize(
    "bad",
    [
        ["--alpha", "0"],
        ["--lam", "-0.5"],
        ["--activation", "relu"],
        ["--simulate", "100", "--seeds", "1"],
    ],
)
def test_cli_bad_input_exits_2_without_output(tmp_path, capsys, bad):
    out = tmp_path / "run"
    assert main(["theory", "--out", str(out), "--plot", str(tmp_path / "p.png"), *bad]) == 2
    assert "bayes-slr theory: error:" in capsys.readouterr().err
    assert not out.exists() and not (tmp_path / "p.png").exists()

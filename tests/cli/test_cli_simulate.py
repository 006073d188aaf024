"""``bayes-slr simulate``: file contents, atomic writes, refusals."""

import json
import subprocess
import sys

import numpy as np
import pytest

from bayes_slr.cli.main import main

BASE = [
    "simulate",
    "--variant",
    "spiked",
    "--D",
    "16",
    "--L",
    "5",
    "--nu",
    "2",
    "--Delta",
    "0.1",
    "--N",
    "300",
]


def test_writes_npz_with_data_teacher_and_config(tmp_path, capsys):
    out = tmp_path / "data.npz"
    assert main(BASE + ["--variable-length", "--seed", "3", "--out", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)["rows"][0]
    with np.load(out) as data:
        for name in ("X", "lengths", "y", "eps", "k_star", "v_star", "chi_star", "z_star"):
            assert name in data.files
        assert data["X"].shape == (300, 5, 16)
        meta = json.loads(str(data["config"]))
        chi = data["chi_star"][np.arange(300), data["eps"]]
        assert summary["mean_chi_star_at_location"] == pytest.approx(float(chi.mean()))
        assert np.all(data["eps"] < data["lengths"])
    assert meta["config"]["length"] == "L~U{1..5}" and meta["seed"] == 3
    assert {"jax", "numpyro", "numpy"} <= set(meta["versions"])
    assert summary["shapes"]["X"] == "300x5x16"
    assert list(tmp_path.iterdir()) == [out]  # no temporary file left behind


def test_same_seed_same_file(tmp_path):
    paths = [tmp_path / "a.npz", tmp_path / "b.npz"]
    for path in paths:
        assert main(BASE + ["--seed", "1", "--out", str(path)]) == 0
    with np.load(paths[0]) as a, np.load(paths[1]) as b:
        np.testing.assert_array_equal(a["X"], b["X"])
        np.testing.assert_array_equal(a["y"], b["y"])


def test_existing_file_needs_force(tmp_path, capsys):
    out = tmp_path / "data.npz"
    out.write_bytes(b"keep me")
    assert main(BASE + ["--out", str(out)]) == 2
    assert "exists; set --force to overwrite it" in capsys.readouterr().err
    assert out.read_bytes() == b"keep me"
    assert main(BASE + ["--out", str(out), "--force"]) == 0
    assert out.read_bytes() != b"keep me"


@pytest.mark.parametrize(
    "changes, message",
    [
        (["--nu", "-1"], "nu must be a number >= 0"),
        (["--L", "0"], "L must be an integer >= 1"),
        (["--D", "0"], "D must be an integer >= 1"),
        (["--N", "0"], "N must be an integer >= 1"),
        (["--Delta", "-0.1"], "Delta must be a number >= 0"),
        (["--nu", "inf"], "inf is allowed for max only"),
    ],
)
def test_rejected_command_names_the_parameter_and_leaves_no_file(
    tmp_path, capsys, changes, message
):
    out = tmp_path / "data.npz"
    assert main(BASE + changes + ["--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("error:") == 1
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_missing_output_folder_is_refused(tmp_path, capsys):
    assert main(BASE + ["--out", str(tmp_path / "nowhere" / "data.npz")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_console_script_rejects_non_numeric_values(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "bayes_slr.cli.main",
            "simulate",
            "--nu",
            "abc",
            "--out",
            str(tmp_path / "x.npz"),
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert "argument --nu: expected a number, got 'abc'" in result.stderr
    assert not (tmp_path / "x.npz").exists()

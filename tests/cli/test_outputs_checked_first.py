"""Output paths are checked before any work: an image suffix matplotlib cannot write, an output
file whose suffix is not its format, on the command line and in Python alike."""

from __future__ import annotations

import pytest

import bayes_slr
from bayes_slr.cli.main import main
from bayes_slr.errors import ConfigError
from bayes_slr.experiments.figures import check_plot_file, plot_formats


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["bayes-risk", "--plot", "fig.xyz"], "--plot: matplotlib writes .png"),
        (["bayes-risk", "--plot", "fig"], "(no suffix)"),
        (["posterior", "--out", "post.txt"], "--out: posterior writes .nc"),
        (["simulate", "--out", "data.txt"], "--out: simulate writes .npz"),
    ],
)
def test_a_bad_output_suffix_exits_2_before_computing(capsys, tmp_path, monkeypatch, argv, said):
    monkeypatch.chdir(tmp_path)
    assert main([*argv, "--quiet"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # no table: nothing was computed
    assert said in captured.err and captured.err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def test_every_suffix_matplotlib_writes_is_accepted():
    assert plot_formats()[0] == ".png" and {".pdf", ".svg"} <= set(plot_formats())
    for suffix in plot_formats():
        check_plot_file(f"fig{suffix}")
    check_plot_file("FIG.PNG")


def test_python_refuses_the_same_before_work(tmp_path):
    with pytest.raises(ConfigError, match="simulate writes .npz"):
        bayes_slr.simulate(N=10, D=5, out=tmp_path / "data.txt")
    with pytest.raises(ConfigError, match="posterior writes .nc"):
        bayes_slr.posterior(D=5, alpha=1, out=tmp_path / "post.txt")
    assert list(tmp_path.iterdir()) == []

"""``bayes-slr posterior`` and ``posterior-sweep``: output, re-summarising, resuming, bad input."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from bayes_slr.cli import posterior as posterior_cli
from bayes_slr.cli.main import main
from bayes_slr.inference import posterior_io

# Same task and shapes as tests/inference/test_samplers.py (compiled samplers are reused).
TASK = [
    "--variant",
    "spiked",
    "--D",
    "10",
    "--L",
    "3",
    "--nu",
    "4",
    "--Delta",
    "0.1",
    "--seed",
    "0",
]
FAST = [
    "--sampler",
    "gibbs",
    "--chains",
    "4",
    "--warmup",
    "200",
    "--samples",
    "500",
    "--N-test",
    "10000",
    "--max-draws",
    "200",
]


def _json(capsys: pytest.CaptureFixture) -> dict:
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def posterior_file(tmp_path_factory):
    """A posterior written by the CLI (Gibbs, alpha = 8) and its JSON summary."""
    path = tmp_path_factory.mktemp("posterior") / "post.nc"
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        assert main(["posterior", *TASK, *FAST, "--alpha", "8", "--out", str(path), "--json"]) == 0
    return path, json.loads(stdout.getvalue())


def test_posterior_json_and_file(posterior_file, capsys):
    """JSON has the documented keys; the file loads; the Bayes error sits below the ERM errors."""
    path, summary = posterior_file
    for key in (
        "bayes_test_error",
        "stderr",
        "rhat_max",
        "ess_bulk_min",
        "overlaps",
        "erm",
        "config",
        "posterior_mean_f_error",
        "importance_ess",
        "warnings",
        "start_agreement",
        "multimodal",
    ):
        assert key in summary
    assert summary["sampler"] == "gibbs" and isinstance(summary["warnings"], list)
    assert set(summary["posterior_mean_f_error"]) >= {"value", "stderr"}
    assert (
        summary["importance_ess"]["q05"]
        <= summary["importance_ess"]["median"]
        <= summary["importance_ess"]["draws"]
    )
    # both starts find the same unimodal posterior at alpha = 8
    assert summary["start_check"]["init"] == "informed" and summary["multimodal"] is False
    assert set(summary["overlaps"]) >= {"m_k", "m_v"} and set(summary["erm"]) == {
        "softmax",
        "linear",
    }
    assert summary["config"]["alpha"] == 8 and summary["config"]["N"] == 80
    assert summary["rhat_max"] < 1.05
    tree = posterior_io.load_posterior(path)
    assert tree.posterior.sizes["chain"] == 4 and tree.posterior.sizes["draw"] == 500


def test_from_file_reproduces_summary(posterior_file, capsys):
    """``--from`` re-summarises the saved draws: same test error (same recorded seed
    and test set).
    """
    path, summary = posterior_file
    assert (
        main(
            [
                "posterior",
                "--from",
                str(path),
                "--N-test",
                "10000",
                "--max-draws",
                "200",
                "--no-erm",
                "--json",
            ]
        )
        == 0
    )
    again = _json(capsys)
    assert again["bayes_test_error"] == pytest.approx(summary["bayes_test_error"], rel=1e-12)
    assert again["erm"] is None


def test_posterior_text_report(tmp_path, capsys):
    """Text report with trace/rank plots (NUTS runs through the same code:
    tests/inference/test_samplers.py).
    """
    plot = tmp_path / "trace.png"
    assert main(["posterior", *TASK, *FAST, "--alpha", "8", "--no-erm", "--plot", str(plot)]) == 0
    out = capsys.readouterr().out
    assert "r_hat max" in out and "Bayes-optimal test error" in out and plot.stat().st_size > 0
    assert "posterior mean of f" in out and "start_agreement" in out


STUCK = [
    "--variant",
    "spiked",
    "--D",
    "40",
    "--L",
    "3",
    "--nu",
    "2",
    "--Delta",
    "0.01",
    "--alpha",
    "1.1",
    "--sampler",
    "gibbs",
    "--chains",
    "2",
    "--warmup",
    "30",
    "--samples",
    "30",
    "--N-test",
    "200",
    "--no-erm",
    "--check-start",
    "--seed",
    "0",
]
"""Near the hard phase (Delta small, alpha = 1.1) with 60 draws: chains started at random have not
found the informed chains' mode."""


def test_warnings_in_table_and_json(capsys, tmp_path):
    """Every posterior warning, as a one-line ``warning:`` (the shared format) under the table and
    the same text in the JSON list, for ``posterior`` and (each prefixed by its alpha)
    ``posterior-sweep``.

    Margins (so that other rounding, which changes the chains, still shows each): r_hat 2.1
    (threshold 1.01); ESS bulk at most the 60 draws (threshold 400); the importance ESS at most
    the 60 draws (threshold 100); the random start's m_k 8.5 Monte Carlo standard errors from
    the informed start's (threshold 4).
    """
    assert main(["posterior", *STUCK, "--json"]) == 0
    summary = _json(capsys)
    for fragment in ("r_hat max", "ESS bulk min", "importance ESS 5% quantile", "starts disagree"):
        assert any(fragment in warning for warning in summary["warnings"]), fragment
    assert main(["posterior", *STUCK]) == 0
    out = capsys.readouterr().out
    assert [line for line in out.splitlines() if line.lower().startswith("warning")] == [
        f"warning: {warning}" for warning in summary["warnings"]
    ]
    sweep = ["posterior-sweep", *STUCK, "--out", str(tmp_path), "--quiet"]
    assert main([*sweep, "--json"]) == 0
    (row,) = _json(capsys)["rows"]
    assert len(row["warnings"]) == 4
    assert main(sweep) == 0  # resumed from the log: the same warnings, each with its alpha
    out = capsys.readouterr().out
    assert [line for line in out.splitlines() if line.startswith("warning")] == [
        f"warning: alpha 1.1: {warning}" for warning in row["warnings"]
    ]


def test_divergent_transitions_warning(capsys):
    """NUTS without warm-up keeps its initial step size, far too long for a posterior as sharp as
    ``Delta = 0.001`` makes it: every one of the 40 transitions diverges (the warning needs one).
    """
    argv = ["posterior", "--variant", "spiked", "--D", "8", "--L", "3", "--nu", "2"]
    argv += ["--Delta", "0.001", "--alpha", "4", "--sampler", "nuts", "--chains", "2"]
    argv += ["--warmup", "0", "--samples", "20", "--N-test", "200", "--no-erm"]
    argv += ["--no-check-start", "--seed", "3"]
    assert main([*argv, "--json"]) == 0
    summary = _json(capsys)
    assert summary["divergences"] > 0
    assert any("divergent transitions" in warning for warning in summary["warnings"])
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert [line for line in out.splitlines() if line.startswith("warning")] == [
        f"warning: {warning}" for warning in summary["warnings"]
    ]


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--chains", "0"], "chains must be an integer >= 1"),
        (["--samples", "0"], "samples must be an integer >= 1"),
        (["--Delta", "0"], "Delta must be > 0"),
        (["--variant", "max", "--nu", "inf"], "nu must be finite"),
        (["--variant", "max", "--nu", "inf", "--sampler", "gibbs-hmc"], "nu must be finite"),
        (["--variant", "max", "--nu", "inf", "--sampler", "nuts"], "nu must be finite"),
        (["--variant", "spiked", "--nu", "inf"], "nu must be a finite number"),
        (
            ["--variant", "max", "--sampler", "gibbs"],
            "sampler gibbs does not support the max variant",
        ),
        (
            ["--variant", "spiked", "--sampler", "gibbs-hmc"],
            "sampler gibbs-hmc does not support the spiked variant",
        ),
        (["--chains", "1"], "chains must be >= 2 with check-start"),
        (["--alpha", "0.01"], "alpha must give N"),
    ],
)
def test_bad_input_writes_nothing(arguments, message, tmp_path, capsys):
    """Exit 2 with one message naming the parameter; an existing --out is untouched."""
    out = tmp_path / "post.nc"
    out.write_bytes(b"keep me")
    assert main(["posterior", *TASK, *arguments, "--out", str(out), "--force"]) == 2
    assert message in capsys.readouterr().err
    assert out.read_bytes() == b"keep me"


def test_bad_paths(posterior_file, tmp_path, capsys):
    """Existing --out without --force, a missing folder, corrupt and foreign --from files."""
    path, _ = posterior_file
    before = path.read_bytes()
    assert main(["posterior", *TASK, *FAST, "--out", str(path)]) == 2
    assert "exists" in capsys.readouterr().err and path.read_bytes() == before
    assert main(["posterior", *TASK, *FAST, "--out", str(tmp_path / "no" / "post.nc")]) == 2
    assert "does not exist" in capsys.readouterr().err
    corrupt = tmp_path / "corrupt.nc"
    corrupt.write_bytes(before[:1000])
    for bad in (corrupt, tmp_path / "missing.nc"):
        assert main(["posterior", "--from", str(bad)]) == 2
        assert "posterior" in capsys.readouterr().err


def test_sweep_resumes(tmp_path, capsys, monkeypatch):
    """Second run of the same sweep samples nothing and reports the same rows; netCDF and plot
    written.
    """
    arguments = [
        "posterior-sweep",
        *TASK,
        *FAST,
        "--no-erm",
        "--alpha",
        "8",
        "32",
        "--out",
        str(tmp_path),
    ]
    assert main([*arguments, "--plot", str(tmp_path / "sweep.png"), "--json"]) == 0
    first = _json(capsys)
    assert [row["alpha"] for row in first["rows"]] == [8, 32]
    assert (tmp_path / "posterior_alpha32.nc").is_file() and (tmp_path / "sweep.png").is_file()
    assert len((tmp_path / "posterior_sweep.jsonl").read_text().splitlines()) == 2

    def refuse(*args, **kwargs):
        raise AssertionError("a finished point was sampled again")

    monkeypatch.setattr(posterior_cli, "sample_point", refuse)
    assert main([*arguments, "--json"]) == 0
    second = _json(capsys)
    assert [row["bayes_test_error"] for row in second["rows"]] == [
        row["bayes_test_error"] for row in first["rows"]
    ]

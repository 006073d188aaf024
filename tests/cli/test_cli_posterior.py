"""``bayes-slr posterior`` and ``posterior-sweep``: output, re-summarising, resuming, bad input."""

from __future__ import annotations

import contextlib
import io
import json
import math

import pytest

import bayes_slr
from bayes_slr.cli.main import main
from bayes_slr.experiments import _posterior_point as posterior_point
from bayes_slr.inference import posterior_io
from bayes_slr.records import SweepLog
from bayes_slr.studies import posterior as posterior_study

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
FEW_TASK = ["--variant", "spiked", "--D", "10", "--L", "8", "--nu", "4", "--Delta", "0.1"]
FEW = [
    "--sampler",
    "gibbs",
    "--chains",
    "2",
    "--warmup",
    "0",
    "--samples",
    "20",
    "--N-test",
    "2000",
    "--max-draws",
    "8",
    "--no-erm",
    "--alpha",
    "2",
]
"""A quick posterior from too few draws (no warm-up: the random chains are still far from the
informed ones, for seeds 0, 1, 2 alike), which warns."""
PROVENANCE = ("experiment", "seed", "versions", "device", "created", "error_convention")


def _refuse(*args, **kwargs):
    raise AssertionError("called where nothing may be computed")


def _json(capsys: pytest.CaptureFixture) -> dict:
    return json.loads(capsys.readouterr().out)


def _row(output: dict) -> dict:
    """The one row of a ``posterior --json`` output."""
    (row,) = output["rows"]
    return row


@pytest.fixture(scope="module")
def posterior_file(tmp_path_factory):
    """A posterior written by the CLI (Gibbs, alpha = 8, ERM on) and its JSON output."""
    path = tmp_path_factory.mktemp("posterior") / "post.nc"
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        assert main(["posterior", *TASK, *FAST, "--alpha", "8", "--out", str(path), "--json"]) == 0
    return path, json.loads(stdout.getvalue())


def test_posterior_json_and_file(posterior_file):
    """JSON has the provenance, the full options and the documented keys; the file loads; the Bayes
    error sits below the ERM errors."""
    path, output = posterior_file
    summary = _row(output)
    for key in PROVENANCE:
        assert output[key] is not None, key
    assert output["experiment"] == "posterior" and output["seed"] == 0
    assert set(output["versions"]) >= {"python", "jax", "numpyro", "arviz", "bayes-slr"}
    assert output["config"]["nu"] == 4.0 and output["config"]["D"] == 10
    for key in (
        "bayes_error",
        "rhat_max",
        "ess_bulk_min",
        "overlaps",
        "erm",
        "posterior_mean_f_error",
        "importance_ess",
        "warnings",
        "start_check",
        "oracle_error",
    ):
        assert key in summary
    assert summary["sampler"] == "gibbs" and isinstance(output["warnings"], list)
    # Gibbs has no divergent transitions: null in the JSON (docs/posterior.md), said in the text
    assert summary["divergences"] is None
    assert set(summary["posterior_mean_f_error"]) >= {"value", "stderr"}
    ess = summary["importance_ess"]
    assert ess["q05"] <= ess["median"] <= ess["draws"]
    # both starts find the same unimodal posterior at alpha = 8
    check = summary["start_check"]
    assert check["init"] == "informed" and check["multimodal"] is False
    assert set(summary["overlaps"]) >= {"m_k", "m_v"}
    assert set(summary["erm"]) == {"softmax", "linear"}
    assert summary["alpha"] == 8 and summary["N"] == 80
    assert summary["rhat_max"] < 1.05
    for activation in ("softmax", "linear"):
        assert summary["bayes_error"]["value"] < summary["erm"][activation]["test_error"]
    tree = posterior_io.load_posterior(path)
    assert tree.posterior.sizes["chain"] == 4 and tree.posterior.sizes["draw"] == 500
    assert "erm" in tree.children  # the ERM fits, for --from


def test_from_file_reproduces_summary_without_training_erm(posterior_file, capsys, monkeypatch):
    """``--from`` alone re-summarises with the file's settings (seed, test-set size, draws) and its
    stored ERM: the same numbers, and no ERM is trained."""
    path, output = posterior_file
    monkeypatch.setattr(posterior_study, "erm_study", _refuse)
    assert main(["posterior", "--from", str(path), "--json"]) == 0
    again = _json(capsys)
    summary, resummarised = _row(output), _row(again)
    # same draws, same recorded seed and test set: equal up to summation order
    assert resummarised["bayes_error"]["value"] == pytest.approx(
        summary["bayes_error"]["value"], rel=1e-12
    )
    assert resummarised["erm"] == summary["erm"]
    # the stored fits scored again beside the posterior's predictors: the same paired differences
    differences = summary["paired_differences"]
    assert "erm_softmax - erm_linear" in differences and "bayes - oracle" in differences
    for name, difference in differences.items():
        again_difference = resummarised["paired_differences"][name]
        assert again_difference["value"] == pytest.approx(difference["value"], rel=1e-9, abs=1e-12)
    assert {k: v for k, v in again["config"].items() if k != "source"} == {
        k: v for k, v in output["config"].items() if k != "source"
    }
    assert again["config"]["source"] == str(path)


def test_from_reports_the_options_it_used(posterior_file, capsys, monkeypatch):
    """Issue 22 item 4: evaluation settings given with ``--from`` are the ones reported, and the
    stored ERM fits are scored on the new test set instead of trained again: within the combined
    standard error of the stored scores (independent test sets: 10000 and 2000 sequences)."""
    path, output = posterior_file
    monkeypatch.setattr(posterior_study, "erm_study", _refuse)
    assert main(["posterior", "--from", str(path), "--N-test", "2000", "--json"]) == 0
    again = _json(capsys)
    assert again["config"]["N_test"] == 2000 and again["config"]["erm"] is True
    row, stored = _row(again), _row(output)
    assert row["n_test"] == 2000
    for activation in ("softmax", "linear"):
        a, b = row["erm"][activation], stored["erm"][activation]
        assert abs(a["test_error"] - b["test_error"]) < 4 * math.hypot(a["stderr"], b["stderr"])
    assert any("scored on 2000 fresh test sequences" in note for note in again["notes"])
    assert main(["posterior", "--from", str(path), "--N-test", "2000", "--no-erm"]) == 0
    text = capsys.readouterr().out
    config = json.loads(text.splitlines()[0].removeprefix("config: "))
    assert config["N_test"] == 2000 and config["erm"] is False and config["D"] == 10
    assert "errors on 2000 fresh sequences" in text and "ERM softmax" not in text


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--D", "20"], "D = 20 (given) conflicts with D = 10 from the posterior file"),
        (["--variant", "max"], "variant = max (given) conflicts with variant = spiked"),
        (["--nu", "2"], "nu = 2.0 (given) conflicts with nu = 4.0"),
        (["--sampler", "nuts"], "sampler = nuts (given) conflicts with sampler = gibbs"),
        (["--chains", "2"], "chains = 2 (given) conflicts with chains = 4"),
        (["--seed", "1"], "seed = 1 (given) conflicts with seed = 0"),
        (["--alpha", "4"], "alpha = 4.0 (given) conflicts with alpha = 8.0"),
        (["--no-check-start"], "check_start = False (given) conflicts with check_start = True"),
        (["--data", "x.npz"], "--from and --data exclude each other"),
        (["--holdout", "0.5"], "--holdout does not apply with --from"),
    ],
)
def test_from_refuses_settings_that_contradict_the_file(posterior_file, arguments, message, capsys):
    """Issue 22 item 4: a setting given with ``--from`` that the file fixes otherwise is refused
    (one line, exit 2), as ``--data`` refuses one that contradicts the data."""
    path, _ = posterior_file
    assert main(["posterior", "--from", str(path), *arguments]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_posterior_text_report_and_plot(tmp_path, capsys):
    """Text report with trace/rank plots; without ERM (NUTS runs through the same code:
    tests/inference/test_samplers.py)."""
    plot = tmp_path / "trace.png"
    assert main(["posterior", *TASK, *FAST, "--alpha", "8", "--no-erm", "--plot", str(plot)]) == 0
    out = capsys.readouterr().out
    assert "r_hat max" in out and "Bayes-optimal test error" in out and plot.stat().st_size > 0
    assert "posterior mean of f" in out and "start_agreement" in out
    assert "divergences not applicable (the gibbs sampler has no divergent transitions)" in out
    # the teacher's oracle on the same fresh sequences, paired (ERM too, when it runs)
    assert "paired differences on the same" in out and "  Bayes-optimal - oracle: +" in out


def test_public_api_keeps_the_tree_and_draws_on_given_axes(posterior_file):
    """``bayes_slr.posterior(source=...)``: typed summary, the DataTree, a tidy one-row frame, a
    trace plot on the axes given."""
    import matplotlib.pyplot as plt

    path, output = posterior_file
    result = bayes_slr.posterior(source=path, erm=False, progress=False)
    assert result.summary.bayes_error.value == pytest.approx(
        _row(output)["bayes_error"]["value"], rel=1e-12
    )
    assert result.tree.posterior.sizes["draw"] == 500 and result.options.D == 10
    frame = result.to_pandas()
    assert (
        len(frame) == 1 and frame["bayes_error_value"].iloc[0] == result.summary.bayes_error.value
    )
    _, ax = plt.subplots()
    try:
        assert result.plot(ax) is ax and {line.get_label() for line in ax.get_lines()} >= {"m_k"}
    finally:
        plt.close(ax.figure)


def test_every_warning_in_table_and_json(capsys):
    """A posterior from too few draws warns that r_hat, the bulk ESS, the importance ESS and the
    start check fail; each as one ``warning:`` line under the table and the same text in the JSON
    list. (Divergences are NUTS's: their line is tested in test_posterior_experiments.py.)
    """
    assert main(["posterior", *FEW_TASK, *FEW, "--json"]) == 0
    warnings = _json(capsys)["warnings"]
    for word in ("r_hat max", "ESS bulk", "importance ESS", "starts disagree"):
        assert any(word in warning for warning in warnings), (word, warnings)
    assert main(["posterior", *FEW_TASK, *FEW]) == 0
    out = capsys.readouterr().out
    assert [line for line in out.splitlines() if line.startswith("warning")] == [
        f"warning: {warning}" for warning in warnings
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
        (["--sampler", "hmc"], "sampler must be one of auto, gibbs, gibbs-hmc, nuts"),
        (["--chains", "1"], "chains must be >= 2 with --check-start"),
        (["--alpha", "0.01"], "alpha must give N"),
        (["--N-test", "1"], "N_test must be an integer >= 2"),
        (["--lam", "-1"], "lam must be a number >= 0"),
        (["--lam", "big"], "lam must be a number >= 0 or 'auto', got 'big'"),
        (["--holdout", "0.5"], "--holdout applies only with --data"),
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


@pytest.mark.parametrize("command", ["posterior", "posterior-sweep"])
@pytest.mark.parametrize(
    "output", [["--plot", "/proc/x.png"], ["--out", "/proc/x"], ["--out", "AFILE/sub"]]
)
def test_unwritable_outputs_are_refused_before_any_work(
    command, output, tmp_path, capsys, monkeypatch
):
    """Issue 22 item 2 for these commands: exit 2 and one line, and no posterior is computed."""

    def refuse(*args, **kwargs):
        raise AssertionError("computed before refusing the output")

    monkeypatch.setattr(posterior_point, "sample_tree", refuse)
    monkeypatch.setattr(posterior_study, "sample_tree", refuse)
    afile = tmp_path / "afile"
    afile.write_text("")
    output = [part.replace("AFILE", str(afile)) for part in output]
    assert main([command, *FEW_TASK, *FEW, *output]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"bayes-slr {command}: error:") and len(err.strip().splitlines()) == 1


def test_interrupted_posterior_says_nothing_was_written(tmp_path, capsys, monkeypatch):
    """Issue 22 item 6: an interrupt prints what happened (not an empty message), exit 130."""

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(posterior_point, "sample_tree", interrupt)
    out = tmp_path / "post.nc"
    assert main(["posterior", *FEW_TASK, *FEW, "--out", str(out)]) == 130
    assert capsys.readouterr().err == "bayes-slr posterior: interrupted; nothing written\n"
    assert list(tmp_path.iterdir()) == []


def test_sweep_resumes(tmp_path, capsys, monkeypatch):
    """Second run of the same sweep samples nothing and reports the same rows; netCDF and plot
    written; the API reads the same log."""
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
    assert len((tmp_path / "posterior-sweep.jsonl").read_text().splitlines()) == 2
    summary = json.loads((tmp_path / "posterior-sweep.json").read_text())
    assert summary["rows"] == first["rows"] and summary["versions"] == first["versions"]

    def refuse(*args, **kwargs):
        raise AssertionError("a finished point was sampled again")

    monkeypatch.setattr(posterior_study, "sample_tree", refuse)
    assert main([*arguments, "--json"]) == 0
    second = _json(capsys)
    assert second["rows"] == first["rows"]
    result = bayes_slr.posterior_sweep(
        **{**TASK_API, **FAST_API}, erm=False, alpha=(8, 32), out=tmp_path, progress=False
    )
    assert [row.bayes_error.value for row in result.rows] == [
        row["bayes_error"]["value"] for row in first["rows"]
    ]
    assert list(result.to_pandas()["alpha"]) == [8, 32]


TASK_API = {"variant": "spiked", "D": 10, "L": 3, "nu": 4.0, "Delta": 0.1, "seed": 0}
FAST_API = {
    "sampler": "gibbs",
    "chains": 4,
    "warmup": 200,
    "samples": 500,
    "N_test": 10_000,
    "max_draws": 200,
}


def test_interrupted_sweep_keeps_no_orphan_file(tmp_path, capsys, monkeypatch):
    """Issue 22 item 6: interrupted before any point finished, the sweep says nothing was kept
    and leaves no posterior file; interrupted after a point's file was written but before it was
    logged, the next run reads that file instead of sampling again, and logs it."""
    arguments = [
        "posterior-sweep",
        *FEW_TASK,
        *FEW,
        "--no-check-start",
        *("--alpha", "2", "4", "--out", str(tmp_path)),
    ]

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    sample_tree = posterior_study.sample_tree
    monkeypatch.setattr(posterior_study, "sample_tree", interrupt)
    assert main(arguments) == 130
    assert "interrupted: 0 of 2 points finished, nothing kept" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == []

    monkeypatch.setattr(posterior_study, "sample_tree", sample_tree)
    monkeypatch.setattr(SweepLog, "append", interrupt)
    assert main(arguments) == 130
    capsys.readouterr()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["posterior_alpha2.nc"]

    monkeypatch.undo()
    samples = []
    monkeypatch.setattr(
        posterior_study,
        "sample_tree",
        lambda config, settings, *args, **kwargs: (
            samples.append(settings.alpha) or sample_tree(config, settings, *args, **kwargs)
        ),
    )
    assert main([*arguments, "--json"]) == 0
    assert samples == [4] and [row["alpha"] for row in _json(capsys)["rows"]] == [2, 4]
    assert len((tmp_path / "posterior-sweep.jsonl").read_text().splitlines()) == 2


def test_divergent_transitions_warning(capsys):
    """NUTS without warm-up keeps its initial step size, far too long for a posterior as sharp as
    ``Delta = 0.001`` makes it: every one of the 40 transitions diverges (the warning needs one).
    """
    argv = ["posterior", "--variant", "spiked", "--D", "8", "--L", "3", "--nu", "2"]
    argv += ["--Delta", "0.001", "--alpha", "4", "--sampler", "nuts", "--chains", "2"]
    argv += ["--warmup", "0", "--samples", "20", "--N-test", "200", "--no-erm"]
    argv += ["--no-check-start", "--seed", "3"]
    assert main([*argv, "--json"]) == 0
    output = _json(capsys)
    assert _row(output)["divergences"] > 0
    assert any("divergent transitions" in warning for warning in output["warnings"])
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert [line for line in out.splitlines() if line.startswith("warning")] == [
        f"warning: {warning}" for warning in output["warnings"]
    ]

"""What a notebook user meets: short reprs and HTML results, warnings through Python's
``warnings``, quiet progress where nobody watches, NumPy arguments, a clean namespace, and sizes
refused before anything is allocated."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest

import bayes_slr
from bayes_slr.cli.main import main
from bayes_slr.experiments import EXPERIMENTS
from bayes_slr.experiments.base import REPR_TABLE_LINES, Result
from bayes_slr.progress import show_progress
from bayes_slr.warning_categories import (
    AccuracyWarning,
    BayesSLRWarning,
    ConvergenceWarning,
    HardPhaseWarning,
    RSInstabilityWarning,
    warning_category,
)

# Linear attention at lam = 0.01 (test_cli_warnings.py): RS-unstable at alpha = 1 (replicon 1.36,
# standard error about 0.05) and not converged after 500 iterations at alpha = 4.
UNSTABLE_THEORY = dict(
    variant="spiked", nu=2, L=3, Delta=0.1, activations=("linear",), lam=0.01, channel_draws=256
)


def test_every_result_keeps_the_short_repr():
    for experiment in EXPERIMENTS.items():
        assert experiment.result_type.__repr__ is Result.__repr__, experiment.name


def test_repr_and_html_show_the_headline_table_and_warnings():
    with pytest.warns(BayesSLRWarning) as caught:
        result = bayes_slr.theory(alpha=(1.0, 4.0), **UNSTABLE_THEORY, progress=False)
    text = repr(result)
    assert text.splitlines()[0] == (
        f"TheoryResult of theory: {len(result.rows)} rows, 0 notes, {len(result.warnings)} warnings"
    )
    assert len(text.splitlines()) <= REPR_TABLE_LINES + 2 and "provenance" not in text
    page = result._repr_html_()
    assert "<pre>" in page and "test_error" in page and "background" in page
    assert all(w.split(":")[0] in page for w in result.warnings)
    table = result.table().splitlines()
    assert table[-len(result.warnings) :] == [f"warning: {w}" for w in result.warnings]
    # every warning line was issued once, under its category, attributed to this file
    assert [str(w.message) for w in caught] == list(result.warnings)
    assert {w.category for w in caught} == {RSInstabilityWarning, ConvergenceWarning}
    assert all(w.filename == __file__ for w in caught)


def test_warnings_can_be_turned_into_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("error", RSInstabilityWarning)
        with pytest.raises(RSInstabilityWarning, match="RS-unstable"):
            bayes_slr.theory(alpha=1.0, **UNSTABLE_THEORY, progress=False)


def test_the_command_line_prints_warnings_once_not_through_python(capsys):
    argv = ["theory", "--variant", "spiked", "--nu", "2", "--L", "3", "--Delta", "0.1"]
    argv += ["--activations", "linear", "--lam", "0.01", "--alpha", "1", "--channel-draws", "256"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main([*argv, "--quiet"]) == 0
    assert not [w for w in caught if issubclass(w.category, BayesSLRWarning)]
    assert capsys.readouterr().out.count("warning: ") == 1


@pytest.mark.parametrize(
    "line, category",
    [
        ("hard phase at alpha=1.1: AMP (random start, amp row) error 0.63", HardPhaseWarning),
        ("r_hat max 1.038 > 1.01: chains have not converged", ConvergenceWarning),
        ("GAMP did not converge (last residual 0.1)", ConvergenceWarning),
        (
            "replica equations did not converge (replicon 2.79 at the last iterate)",
            ConvergenceWarning,
        ),
        ("linear at alpha=1: RS-unstable (replicon 1.36 >= 1)", RSInstabilityWarning),
        ("Monte Carlo channel (4096 draws): the draws' own error", AccuracyWarning),
        ("ERM softmax: test error 1.2 is above the zero predictor's", BayesSLRWarning),
    ],
)
def test_each_kind_of_warning_has_its_category(line, category):
    assert warning_category(line) is category


def test_numpy_scalars_and_arrays_are_accepted_as_python_values():
    plain = bayes_slr.bayes_risk(L=(2, 3), nu=2.0, progress=False)
    given = bayes_slr.bayes_risk(L=np.array([2, 3]), nu=np.float64(2.0), progress=False)
    assert given.rows == plain.rows and given.options == plain.options
    one = bayes_slr.bayes_risk(L=np.int64(3), progress=False)
    assert one.options.L == (3,) and type(one.options.L[0]) is int
    with pytest.raises(bayes_slr.ConfigError, match="L must be a number or a 1-D sequence"):
        bayes_slr.bayes_risk(L=np.ones((2, 2), dtype=int))


@pytest.mark.parametrize(
    "name, required",
    [("posterior", {}), ("posterior-sweep", {"alpha": (2.0, 4.0)}), ("gap", {})],
)
def test_signatures_show_the_defaults_a_run_resolves(name, required):
    """Each default a signature shows is the value the options resolve to when nothing is given
    (``None`` is shown only where the default depends on another setting or a file)."""
    import inspect

    experiment = EXPERIMENTS.get(name)
    signature = inspect.signature(getattr(bayes_slr, name.replace("-", "_")))
    resolved = experiment.options_type(**required).resolved()
    shown = {
        parameter.name: parameter.default
        for parameter in signature.parameters.values()
        if hasattr(resolved, parameter.name)
        and parameter.default is not None
        and parameter.name not in required
    }
    assert len(shown) >= 12
    assert shown == {key: getattr(resolved, key) for key in shown}


def test_the_namespace_is_the_public_names():
    assert dir(bayes_slr) == sorted(bayes_slr.__all__)
    for name in ("ConvergenceWarning", "RSInstabilityWarning", "HardPhaseWarning"):
        assert issubclass(getattr(bayes_slr, name), bayes_slr.BayesSLRWarning)


def test_frames_have_no_dotted_columns():
    frame = bayes_slr.gap(variant="spiked", nu=2.0, L=3, progress=False).to_pandas()
    assert len(frame) > 0 and not [c for c in frame.columns if "." in c]
    # softmax's optimum is the Bayes error: their difference is float64 rounding, stored as 0
    assert frame[frame.activation == "softmax"].gap.tolist() == [0.0]


def test_progress_is_off_where_nobody_watches(capsys):
    assert show_progress(True) and not show_progress(False)
    assert not sys.stderr.isatty() and not show_progress(None)
    bayes_slr.bayes_risk(L=(2, 3))
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    "argv, words",
    [
        (["simulate", "--N", "1000000000"], ["GiB", "are allowed", "N = 1000000000"]),
        (["bayes-risk", "--L", "1000000000"], ["L must be <= 1e+06"]),
        (["gap", "--L", "1000000000"], ["L must be an integer in 1..1e+07"]),
        (["posterior", "--D", "1000000", "--alpha", "1000"], ["GiB", "are allowed", "D = 1000000"]),
        (["posterior-sweep", "--D", "100000", "--alpha", "1", "1000"], ["GiB", "alpha = 1000"]),
    ],
)
def test_sizes_that_cannot_fit_are_refused_before_any_work(argv, words, tmp_path):
    out = ["--out", str(tmp_path / "x.npz")] if argv[0] == "simulate" else []
    done = subprocess.run(
        [sys.executable, "-m", "bayes_slr.cli", *argv, *out],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.strip().splitlines()
    assert all(word in line for word in words), line
    assert list(tmp_path.iterdir()) == []


def test_a_folder_belongs_to_the_command_that_made_it(tmp_path, capsys):
    assert main(["bayes-risk", "--L", "2", "--out", str(tmp_path), "--quiet"]) == 0
    before = sorted(path.name for path in tmp_path.iterdir())
    capsys.readouterr()
    assert main(["gap", "--L", "2", "--out", str(tmp_path), "--quiet"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "belongs to another command (it holds bayes-risk.jsonl)" in line
    assert sorted(path.name for path in tmp_path.iterdir()) == before


def test_docs_name_every_argument_whose_python_name_differs_from_its_flag():
    from pathlib import Path

    from bayes_slr.experiments.base import option_spec

    api = (Path(__file__).parent.parent / "docs" / "api.md").read_text()
    for experiment in EXPERIMENTS.items():
        for field in experiment.options_type.option_fields():
            spec = option_spec(field)
            if spec.cli and spec.flag and spec.flag != "--" + field.name.replace("_", "-"):
                assert f"`{field.name}=` is `{experiment.name}`'s `{spec.flag}`" in api


def test_documents_cite_no_internal_issue_numbers():
    import re
    from pathlib import Path

    root = Path(__file__).parent.parent
    documents = [
        root / "README.md",
        *(root / "docs").glob("*.md"),
        *(root / "notebooks").glob("*.py"),
    ]
    cited = [
        f"{path.name}: {match.group(0)}"
        for path in documents
        for match in re.finditer(r"\b[Ii]ssues? #?\d+", path.read_text())
    ]
    assert cited == []


def test_api_docstrings_name_arguments_not_flags():
    import re

    for name in ("posterior", "gap", "theory", "dynamics", "simulate"):
        doc = getattr(bayes_slr, name).__doc__
        assert re.findall(r"--[A-Za-z][\w-]*", doc) == [], name
    assert "source re-summarises a posterior written with out" in bayes_slr.posterior.__doc__


def test_posterior_shows_its_chains_warm_up_and_sampling_without_changing_them(capsys):
    settings = dict(D=10, alpha=2.0, chains=2, warmup=200, samples=200, N_test=1000, erm=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesSLRWarning)  # chains this short do not converge
        shown = bayes_slr.posterior(**settings, check_start=False, progress=True)
        err = capsys.readouterr().err
        quiet = bayes_slr.posterior(**settings, check_start=False, progress=False)
    assert "chains from random starts (2) warm-up" in err and "sampling" in err
    assert capsys.readouterr().err == ""
    assert (
        shown.tree["posterior_vectors"]["k"].values == quiet.tree["posterior_vectors"]["k"].values
    ).all()


def test_every_public_member_of_a_result_is_documented():
    from pathlib import Path

    api = (Path(__file__).parent.parent / "docs" / "api.md").read_text()
    for experiment in EXPERIMENTS.items():
        members = [name for name in dir(experiment.result_type) if not name.startswith("_")]
        missing = [name for name in members if f"`{name}" not in api]
        assert missing == [], (experiment.name, missing)


def test_tables_print_no_nan_where_a_number_is_meant():
    """A float without a value (nan) prints as ``-``; inf and exact zeros keep their words."""
    import math

    from bayes_slr.experiments.tables import format_table

    table = format_table(["a", "b", "c", "d"], [[math.nan, math.inf, 4.77e-15, 0.25]])
    assert table.splitlines()[-1].split() == ["-", "inf", "0", "0.25"]

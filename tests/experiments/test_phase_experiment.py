"""``bayes-slr phase``: the thresholds over a swept setting, through the command line (issue 20
item 3): the rows carry the thresholds in the theory's order, the Bayes-optimal branch and AMP's
switch where they say, bad input is refused in one line, and a folder resumes without
recomputing."""

from __future__ import annotations

import contextlib
import io
import json
import math

import pytest

from bayes_slr.cli.main import main
from bayes_slr.experiments.phase import (
    CURVE_POINTS,
    DEFAULT_MC_SAMPLES,
    PhaseOptions,
    PhaseResult,
)
from bayes_slr.models.spec import LengthLaw, SLRConfig
from bayes_slr.studies.phase_records import PhaseCurves, PhaseRow, has_hard_phase

ALPHA_MIN, ALPHA_MAX, TOL = 0.9, 1.6, 1e-4
TINY = [
    "phase",
    "--Delta",
    "0",
    "0.001",
    "--alpha-min",
    str(ALPHA_MIN),
    "--alpha-max",
    str(ALPHA_MAX),
    "--tol",
    str(TOL),
    "--scan",
    "17",
    "--no-curves",  # the threshold curves have their own test below (they take longer)
]


def run_json(capsys, argv: list[str]) -> dict:
    assert main([*argv, "--json", "--quiet"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """The tiny grid, run once into a folder: ``(folder, JSON output)`` (``capsys`` is
    per-test: the output is captured by hand)."""
    folder = tmp_path_factory.mktemp("phase")
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main([*TINY, "--out", str(folder), "--json", "--quiet"]) == 0
    return folder, json.loads(buffer.getvalue())


def config(Delta: float) -> SLRConfig:
    return SLRConfig("spiked", 1, LengthLaw.fixed(3), 2.0, Delta)


def test_rows_carry_the_thresholds_in_the_theorys_order(tiny):
    _, output = tiny
    rows = {row["Delta"]: PhaseRow.from_dict(row) for row in output["rows"]}
    assert set(rows) == {0.0, 0.001}
    noiseless, noisy = rows[0.0], rows[0.001]
    # Delta = 0: alpha_sp = alpha_IT = alpha_PR = 1 exactly, alpha_alg = 1.24096 (docs/theory.md)
    assert noiseless.statuses["alpha_IT"] == "exact" and noiseless.alpha_IT == 1.0
    assert noiseless.alpha_PR == 1.0 and noiseless.alpha_sp == 1.0
    assert abs(noiseless.alpha_alg - 1.24096) < 2 * TOL
    # Delta = 0.001: a hard phase, alpha_sp < alpha_IT < alpha_alg (1.2048, 1.2261, 1.2525)
    assert noisy.alpha_sp < noisy.alpha_IT < noisy.alpha_alg
    assert abs(noisy.alpha_IT - 1.22612) < 5 * TOL and abs(noisy.alpha_alg - 1.25249) < 5 * TOL
    assert math.isnan(noisy.alpha_PR) and noisy.statuses["alpha_PR"] == "none"
    for row in rows.values():
        assert row.hard_phase and row.method == "quadrature" and row.mc_samples == 0
        assert math.isnan(row.alpha_WR) and row.statuses["alpha_WR"] == "none"
        assert row.tolerances["alpha_alg"] <= TOL
    # nan is written as null in the JSON (standard numbers only)
    assert output["rows"][0]["alpha_WR"] is None
    assert any("nan = none" in note for note in output["notes"])


def test_thresholds_agree_with_the_branches_just_below_and_above(tiny):
    """At ``alpha_IT`` the Bayes-optimal branch switches from AMP's to the informed one; at
    ``alpha_alg`` AMP's branch ends (the two starts meet)."""
    from bayes_slr.formulas.bayes_channel import BayesChannel
    from bayes_slr.formulas.phase import bayes_branches

    _, output = tiny
    noisy = next(PhaseRow.from_dict(r) for r in output["rows"] if r["Delta"] == 0.001)
    channel = BayesChannel(config(0.001))
    step = 0.005
    below = bayes_branches(config(0.001), noisy.alpha_IT - step, channel=channel)
    above = bayes_branches(config(0.001), noisy.alpha_IT + step, channel=channel)
    assert below.distinct and below.bayes_optimal == "uninformative" and not below.hard_phase
    assert above.distinct and above.bayes_optimal == "informed" and above.hard_phase
    assert below.certain and above.certain
    before = bayes_branches(config(0.001), noisy.alpha_alg - step, channel=channel)
    after = bayes_branches(config(0.001), noisy.alpha_alg + step, channel=channel)
    assert before.hard_phase and not after.distinct
    assert after.amp.test_error < before.amp.test_error - 0.05  # AMP's error jumps down


def test_the_curves_add_a_figure_and_leave_the_rows_as_they_were(tiny, capsys, tmp_path):
    """``--curves`` (the default) traces the thresholds up to their merge and draws them in the
    ``(Delta, alpha)`` plane; the rows are the ones without curves, the merge is in the notes."""
    _, without = tiny
    figure = tmp_path / "phase.png"
    argv = [*TINY[:-1], "--curve-points", "2", "--plot", str(figure)]
    output = run_json(capsys, argv)
    assert output["rows"] == without["rows"] and without["curves"] is None
    curves = PhaseCurves.from_dict(output["curves"])
    assert curves.Delta[0] == 0.0 and curves.Delta[-1] == curves.merge_Delta
    assert 0.0029 < curves.merge_Delta < 0.003 and curves.merge_tolerance <= 4e-6
    assert curves.alpha_sp[-1] == curves.alpha_IT[-1] == curves.alpha_alg[-1]
    assert any(
        note.startswith(
            f"curves: alpha_sp, alpha_IT and alpha_alg merge at Delta = {curves.merge_Delta:.7g}"
        )
        for note in output["notes"]
    )
    assert figure.stat().st_size > 0
    import matplotlib

    from bayes_slr.experiments.base import Provenance

    matplotlib.use("Agg")
    rows = tuple(PhaseRow.from_dict(r) for r in output["rows"])
    options = PhaseOptions(Delta=(0.0, 0.001), alpha_min=ALPHA_MIN, alpha_max=ALPHA_MAX)
    provenance = Provenance("phase", 0, {}, "cpu", "now")
    ax = PhaseResult(options, rows, provenance, curves=curves).plot()
    assert ax.get_xlim()[0] == 0.0 and ax.get_xlim()[1] >= 1.25 * curves.merge_Delta
    labels = [text.get_text() for text in ax.figure.legends[0].get_texts()]
    assert "alpha_IT" in labels and any(label.startswith("merge: Delta") for label in labels)
    assert any(label.startswith("hard") for label in labels)


def test_resume_recomputes_nothing(tiny, capsys, monkeypatch):
    folder, first = tiny

    def must_not_run(*args, **kwargs):
        raise AssertionError("a finished point was recomputed")

    from bayes_slr.formulas import thresholds

    monkeypatch.setattr(thresholds, "thresholds", must_not_run)
    again = run_json(capsys, [*TINY, "--out", str(folder)])
    assert again["rows"] == first["rows"] and not again["failures"]
    assert len((folder / "phase.jsonl").read_text().splitlines()) == 2
    assert json.loads((folder / "phase.json").read_text())["rows"] == first["rows"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--Delta", "-1"], "Delta"),
        (["--alpha-max", "0"], "alpha_max"),
        (["--alpha-min", "2", "--alpha-max", "1"], "alpha_max"),
        (["--tol", "0"], "tol"),
        (["--tol", "1"], "tol"),
        (["--scan", "3"], "scan"),
        (["--Delta", "0", "0.1", "--L", "2", "3"], "one setting at a time"),
        (["--nu", "1", "2"], "Delta's default is a list"),
        (["--variant", "max", "--nu", "200"], "nu"),
    ],
)
def test_bad_input_is_refused_in_one_line(extra, message, capsys, tmp_path):
    code = main(["phase", *extra, "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and message in err, err
    assert not (tmp_path / "out").exists()


def test_options_defaults_and_the_core_agree():
    from bayes_slr.formulas import bayes_channel, fixed_point_curve

    assert CURVE_POINTS == fixed_point_curve.CURVE_POINTS
    assert DEFAULT_MC_SAMPLES == bayes_channel.DEFAULT_MC_SAMPLES
    options = PhaseOptions(nu=(1.0, 2.0), Delta=(0.0,))
    assert options.swept() == "nu" and len(options.grid()) == 2
    assert PhaseOptions().swept() == "Delta" and PhaseOptions().resolved().nu == (2.0,)


def test_hard_phase_and_regions_out_of_range():
    assert has_hard_phase(1.0, 1.2) and has_hard_phase(-math.inf, 1.2)
    assert has_hard_phase(1.0, math.inf)
    assert not has_hard_phase(math.nan, math.nan) and not has_hard_phase(math.inf, math.inf)
    assert not has_hard_phase(1.0, 1.0)


def test_table_and_plot(tiny):
    import matplotlib

    matplotlib.use("Agg")
    _, output = tiny
    options = PhaseOptions(
        Delta=(0.0, 0.001), alpha_min=ALPHA_MIN, alpha_max=ALPHA_MAX, tol=TOL, scan=17
    )
    rows = tuple(PhaseRow.from_dict(r) for r in output["rows"])
    from bayes_slr.experiments.base import Provenance

    result = PhaseResult(options, rows, Provenance("phase", 0, {}, "cpu", "now"))
    table = result.table()
    assert "1 (exact)" in table and "+-" in table and "none" in table
    assert "alpha_WR" not in table.splitlines()[0]  # none by construction: a note, not a column
    noisy = rows[1]
    regions = result.regions(noisy)
    assert [name for name, *_ in regions] == ["impossible", "hard", "easy"]
    assert regions[1][1:] == (noisy.alpha_IT, noisy.alpha_alg)
    ax = result.plot()
    assert ax.get_xlim() == (ALPHA_MIN, ALPHA_MAX)
    labels = [text.get_text() for text in ax.figure.legends[0].get_texts()]
    assert any(label.startswith("hard") for label in labels)
    assert any(label.startswith("alpha_sp") for label in labels)

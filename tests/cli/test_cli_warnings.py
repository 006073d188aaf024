"""Every warning and note of ``theory``, ``gap`` and ``amp`` shown through the command line.

Each case runs one command twice in this process through ``main([...])``: first as a table
with ``--out`` (the printed ``warning:``/``note:`` lines), then with ``--json`` on the same
folder, which resumes from the sweep log and must list the same texts (the path where
results come back from the log, where a non-finite replicon once arrived as a string). The
settings are the cheapest found where each warning fires; each is chosen far from the
warning's threshold, so that a machine whose rounding moves the numbers still shows it (the
margin is said with each case). The posterior's warnings are in ``test_cli_posterior.py``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import bayes_slr
from bayes_slr.cli.main import main

SPIKED = ["--variant", "spiked", "--nu", "2", "--L", "3"]


def run_table_then_json(
    capsys: pytest.CaptureFixture, argv: list[str], out: Path
) -> tuple[list[str], dict]:
    """Printed ``warning:``/``note:`` lines of the table run, and the resumed ``--json`` output."""
    assert main([*argv, "--out", str(out), "--quiet"]) == 0
    printed = [
        line
        for line in capsys.readouterr().out.splitlines()
        if line.startswith(("warning: ", "note: "))
    ]
    assert main([*argv, "--out", str(out), "--quiet", "--json"]) == 0
    return printed, json.loads(capsys.readouterr().out)


def assert_shown(printed: list[str], result: dict, *fragments: str) -> None:
    """Each fragment is in one JSON warning, and the table printed exactly the JSON's notes and
    warnings, one ``note:``/``warning:`` line each.
    """
    notes, warnings = result.get("notes", []), result["warnings"]
    assert printed == [f"note: {n}" for n in notes] + [f"warning: {w}" for w in warnings]
    for fragment in fragments:
        assert any(fragment in warning for warning in warnings), (fragment, warnings)


def test_theory_rs_unstable_and_not_converged(capsys, tmp_path):
    """Linear attention at ``lam = 0.01``: at ``alpha = 1`` the iteration converges on an
    RS-unstable point (replicon 1.36 with 256 draws, standard error about 0.05, far above 1);
    at ``alpha = 4`` it still moves by 1e-2 after its 500 iterations (stopping tolerance 1e-7),
    at a replicon near 5.
    """
    argv = ["theory", *SPIKED, "--Delta", "0.1", "--activation", "linear", "--lam", "0.01"]
    argv += ["--alpha", "1", "4", "--channel-draws", "256"]
    printed, result = run_table_then_json(capsys, argv, tmp_path)
    assert_shown(
        printed,
        result,
        "linear (theory, init random) at alpha=1: RS-unstable (replicon",
        "linear (theory, init random) at alpha=4: not converged",
        "linear (theory, init random) at alpha=4: RS-unstable (replicon",
    )
    stable = {row["alpha"]: row for row in result["rows"]}
    assert stable[1]["converged"] and stable[1]["diagnostics"]["rs_stable"] is False
    assert not any("alpha=1: not converged" in w for w in result["warnings"])


def test_theory_command_of_the_issue_exits_0_with_its_warnings(capsys, tmp_path):
    """The RS-unstable command that ended in a traceback (default 4096 draws): it exits 0 and
    says why its number is not to be read. Here it converges (290 iterations) on an RS-unstable
    point (replicon 5.2); where the iteration breaks down instead (NaN, as it once did), it is
    not converged and its stability unknown. The time is the one solve (the pooled draws' damped
    iteration, 290 steps, after the chord from the 512-point pilot's fixed point is refused).
    """
    argv = ["theory", *SPIKED, "--Delta", "0.1", "--activation", "linear", "--alpha", "4"]
    argv += ["--lam", "0.01", "--channel-draws", "4096"]  # the issue's draws, a default then
    printed, result = run_table_then_json(capsys, argv, tmp_path)
    assert_shown(printed, result)
    (row,) = [row for row in result["rows"] if row["source"] == "theory"]
    said = " ".join(result["warnings"])
    assert said, "an RS-unstable region gave no warning"
    assert ("not converged" in said) == (not row["converged"])
    assert ("RS-unstable" in said) == (row["diagnostics"]["rs_stable"] is False)


def test_theory_hard_phase(capsys, tmp_path):
    """Spiked ``nu = 2``, ``L = 3``, ``Delta = 0``, ``alpha = 1.1`` (docs/theory.md part D): a hard
    phase. The ``amp`` row (the uninformative start) stops at 0.63141, the ``bayes`` row (the
    fixed point of largest free entropy: exact recovery of ``v``, ``Phi = +inf``) at 0.42750; the
    warning names both rows. At ``alpha = 2`` (above ``alpha_alg = 1.241``) they coincide.
    """
    argv = ["theory", *SPIKED, "--Delta", "0", "--alpha", "1.1", "2", "--bayes"]
    argv += ["--activations", "linear", "--channel-draws", "64"]
    printed, result = run_table_then_json(capsys, argv, tmp_path)
    assert_shown(
        printed,
        result,
        "hard phase at alpha=1.1: AMP (random start, amp row) error 0.6314, Bayes-optimal error "
        "0.4275 (bayes row",
    )
    assert not any("alpha=2" in w for w in result["warnings"])
    rows = {(r["estimator"], r["alpha"]): r for r in result["rows"] if r["source"] == "theory"}
    bayes, amp = rows["bayes", 1.1], rows["amp", 1.1]
    assert abs(bayes["test_error"] - 0.42750) < 1e-5 and abs(amp["test_error"] - 0.63141) < 1e-5
    assert bayes["init"] == "informed" and bayes["diagnostics"]["hard_phase"]
    assert bayes["diagnostics"]["free_entropy"] > amp["diagnostics"]["free_entropy"]
    assert rows["bayes", 2.0]["test_error"] == rows["amp", 2.0]["test_error"]
    assert any("bayes rows: the global maximiser" in note for note in result["notes"])


def test_theory_max_slr_branch_not_resolved(capsys, tmp_path):
    """Max-SLR (``nu = inf``, ``L = 3``: a Monte Carlo channel) at ``Delta = 0.001``, ``alpha =
    1.3``, 256 draws of seed 0: both branches exist (``q_v`` 0.992 and 0.500) and their free
    entropies differ by 0.011 against a combined standard error of 0.087, so two standard errors
    cannot tell which is Bayes-optimal (the difference would have to be 16 times larger). The
    command exits 0 and says so in the table and in ``--json``, whose rows show why; through the
    API the line is an ``AccuracyWarning``. (With 1024 draws it stays unresolved: 0.084 against
    0.090.)
    """
    task = dict(variant="max", nu=math.inf, L=3, Delta=0.001, alpha=1.3, channel_draws=256)
    argv = ["theory", "--variant", "max", "--nu", "inf", "--L", "3", "--Delta", "0.001"]
    argv += ["--alpha", "1.3", "--bayes", "--activations", "linear", "--channel-draws", "256"]
    printed, result = run_table_then_json(capsys, argv, tmp_path)
    unresolved = (
        "bayes at alpha=1.3: the two branches' free entropies differ by less than two Monte Carlo "
        "standard errors; which one is Bayes-optimal is not resolved (more --channel-draws)"
    )
    assert_shown(printed, result, unresolved)
    rows = {r["estimator"]: r["diagnostics"] for r in result["rows"] if r["source"] == "theory"}
    bayes, amp = rows["bayes"], rows["amp"]
    assert bayes["distinct"] and not bayes["certain"] and bayes["mc_samples"] == 256
    gap = abs(bayes["free_entropy"] - amp["free_entropy"])
    assert gap < 2 * math.hypot(bayes["free_entropy_stderr"], amp["free_entropy_stderr"])

    with pytest.warns(bayes_slr.BayesSLRWarning) as caught:
        api = bayes_slr.theory(**task, activations=(), bayes=True, progress=False)
    assert unresolved in api.warnings
    assert {(str(w.message), w.category) for w in caught} >= {
        (unresolved, bayes_slr.AccuracyWarning)
    }


GAP_ERM = ["gap", *SPIKED, "--activations", "linear", "--seeds", "2"]


def test_gap_disagreeing_restarts_and_worse_than_zero(capsys, tmp_path):
    """No ridge on very noisy labels (``Delta = 4``) at ``N = D = 16``: the fits interpolate the
    noise. The two random starts end at test errors 4 apart (tolerance about 0.1) and the
    reported fit is 3.3 +- 0.3 above the zero predictor (the warning needs 2 standard errors).
    """
    argv = [*GAP_ERM, "--alpha", "1", "--D", "16", "--starts", "2", "--lam", "0", "--Delta", "4"]
    printed, result = run_table_then_json(capsys, argv, tmp_path)
    assert_shown(
        printed,
        result,
        "ERM linear: random starts disagree at",
        "ERM linear: test error",
        "is above the zero predictor's",
    )


def test_gap_unconverged_fit_ridge_at_the_grid_edge_and_its_note(capsys, tmp_path):
    """One-pass SGD never reaches the L-BFGS gradient tolerance (1e-6); at ``N = 2D = 16`` held-out
    validation picks the largest ridge of the grid (100) for a seed; the chosen ridges are a note.
    """
    argv = [*GAP_ERM, "--alpha", "2", "--D", "8", "--starts", "1", "--optimizer", "sgd"]
    printed, result = run_table_then_json(capsys, [*argv, "--lam", "auto"], tmp_path)
    assert_shown(
        printed,
        result,
        "ERM linear: the reported fit did not reach |grad| <= 1e-06 at seeds [0, 1]",
        "ERM linear: lam chosen at the edge of the grid (100)",
    )
    assert any("lam chosen by held-out validation per seed" in n for n in result["notes"])


def test_amp_not_converged(capsys, tmp_path):
    """One GAMP iteration leaves a residual of order 1, far above the tolerance 1e-6."""
    argv = ["amp", *SPIKED, "--D", "50", "--alpha", "2", "--max-iter", "1"]
    printed, result = run_table_then_json(
        capsys, [*argv, "--n-test", "200", "--no-state-evolution"], tmp_path
    )
    assert_shown(printed, result, "alpha=2 seed 0: GAMP did not converge (last residual")

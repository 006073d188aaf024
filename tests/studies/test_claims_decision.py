"""The decision of a claim from its evidence, against cases whose truth is known: simulated
estimates of a known difference (error rates and power of each relation's tests), Holm's
step-down on a worked example and its family-wise error by simulation, the sequential batches
stopping where the evidence decides, and the one-sided reading of an upper bound."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bayes_slr.numerics.decision import (
    DifferenceEstimate,
    decision_p_value,
    draws_to_decide,
    holm_rejections,
    relation_p_values,
)
from bayes_slr.studies import claims as claims_module
from bayes_slr.studies.claims_records import (
    Claim,
    ClaimEvidence,
    ClaimTask,
    Quantity,
    TeacherValues,
)
from bayes_slr.studies.claims_verdict import verdicts

LEVEL = 0.05
TRIALS = 4000
"""Simulated decisions per case: a rate of 0.05 is measured to +-0.0035 (one standard error)."""


def _decided(estimates: np.ndarray, stderr: float, relation: str, tolerance: float = 0.0):
    """The verdict of each simulated estimate: +1 holds, -1 fails, 0 undecided (level 0.05)."""
    out = []
    for value in estimates:
        holds, fails = relation_p_values(DifferenceEstimate(value, stderr), relation, tolerance)
        p = decision_p_value(holds, fails)
        out.append(0 if p > LEVEL else (1 if holds <= fails else -1))
    return np.array(out)


@pytest.mark.parametrize(
    ("relation", "truth", "tolerance", "wrong"),
    [
        ("below", 0.0, 0.0, 1),  # on the boundary the claim is false: 'holds' is the error
        ("above", 0.0, 0.0, 1),
        ("equal", 0.1, 0.1, 1),  # |d| = tolerance: the claim is on its edge
        ("equal", 0.0, 0.1, -1),  # true: 'fails' is the error
    ],
)
def test_wrong_verdicts_stay_below_the_level(relation, truth, tolerance, wrong) -> None:
    """Estimates of a known difference with a known standard error: the wrong verdict comes at
    most at the level (within 4 Monte Carlo standard errors of the simulation)."""
    rng = np.random.default_rng(1)
    stderr = 0.05
    verdict = _decided(truth + stderr * rng.standard_normal(TRIALS), stderr, relation, tolerance)
    rate = np.mean(verdict == wrong)
    assert rate <= LEVEL + 4 * math.sqrt(LEVEL * (1 - LEVEL) / TRIALS)


@pytest.mark.parametrize(
    ("relation", "truth", "tolerance", "right"),
    [
        ("below", -0.3, 0.0, 1),
        ("above", -0.3, 0.0, -1),
        ("equal", 0.0, 0.3, 1),
        ("equal", 0.5, 0.1, -1),
    ],
)
def test_clear_cases_are_decided_right(relation, truth, tolerance, right) -> None:
    """Six standard errors from the boundary, nearly every estimate gets the true verdict."""
    rng = np.random.default_rng(2)
    stderr = 0.05
    verdict = _decided(truth + stderr * rng.standard_normal(500), stderr, relation, tolerance)
    assert np.mean(verdict == right) > 0.99


def test_a_bound_is_taken_in_the_worst_direction() -> None:
    """A deterministic difference inside its quadrature bound of 0 decides nothing; outside it
    decides."""
    inside = DifferenceEstimate(1e-9, 0.0, bound=1e-8)
    assert decision_p_value(*relation_p_values(inside, "below")) == 1.0
    outside = DifferenceEstimate(-1e-7, 0.0, bound=1e-8)
    holds, fails = relation_p_values(outside, "below")
    assert (holds, fails) == (0.0, 1.0)


def test_holm_on_a_worked_example() -> None:
    """Holm (1979): p = (0.01, 0.04, 0.03, 0.005) at 0.05: 0.005 <= 0.0125 and 0.01 <= 0.0167
    are rejected, 0.03 > 0.025 stops the procedure."""
    assert holm_rejections([0.01, 0.04, 0.03, 0.005], 0.05) == [True, False, False, True]


def test_holm_controls_the_family_wise_error() -> None:
    """Five claims whose truth sits on the boundary of 'below' (true difference 0): the
    probability that any of them is declared to hold stays below the level."""
    rng = np.random.default_rng(3)
    any_wrong = 0
    for _ in range(1000):
        tests = [
            relation_p_values(DifferenceEstimate(0.1 * z, 0.1), "below")
            for z in rng.standard_normal(5)
        ]
        rejected = holm_rejections([decision_p_value(*t) for t in tests], LEVEL)
        any_wrong += any(r and h <= f for r, (h, f) in zip(rejected, tests, strict=True))
    assert any_wrong / 1000 <= LEVEL + 4 * math.sqrt(LEVEL * (1 - LEVEL) / 1000)


def test_draws_to_decide_follow_the_square_root_law() -> None:
    """An estimate one standard error from the boundary, with 4 teachers: deciding at the
    two-sided 5% level needs 1.96^2 times as many."""
    found = DifferenceEstimate(-0.1, 0.1)
    assert draws_to_decide(found, "below", 0.0, 4, 0.05) == math.ceil(4 * 1.959964**2)
    assert draws_to_decide(DifferenceEstimate(0.0, 0.1), "below", 0.0, 4, 0.05) is None


def _claim(relation="below", teachers=2, max_teachers=8, **sides) -> Claim:
    return Claim(
        name="c",
        task=ClaimTask(alpha=1.0),
        left=sides.get("left", Quantity("erm", "softmax")),
        right=sides.get("right", Quantity("erm", "linear")),
        relation=relation,
        teachers=teachers,
        max_teachers=max_teachers,
    )


def _fake_batches(monkeypatch, difference: float, spread: float) -> list[int]:
    """Replace the ERM batches by draws of a known per-teacher difference; returns the list of
    batches computed."""
    rng = np.random.default_rng(4)
    computed: list[int] = []

    def batch(claim, index, seed):
        computed.append(index)
        right = rng.standard_normal(claim.teachers)
        left = right + difference + spread * rng.standard_normal(claim.teachers)
        zero = (1e-3,) * claim.teachers
        return TeacherValues(index, tuple(left), zero, tuple(right), zero)

    monkeypatch.setattr(claims_module, "teacher_batch", batch)
    return computed


def test_batches_stop_once_decided(monkeypatch) -> None:
    """A large paired difference with a small spread is decided by its first batch, although
    each side's teacher luck (spread 1) is 100 times the difference's spread."""
    computed = _fake_batches(monkeypatch, -0.5, 0.01)
    evidence = claims_module.claim_evidence(_claim(teachers=4), 0, LEVEL)
    assert computed == [0]
    assert evidence.stopped == "decided" and evidence.teachers == 4
    assert evidence.stderr < 0.05


def test_an_undecidable_difference_runs_to_the_cap_and_says_what_it_needs(monkeypatch) -> None:
    """A true difference of 0 under 'below' is never decided: the batches run to the cap and the
    verdict is undecided, with a number of teachers (or none) to decide it."""
    computed = _fake_batches(monkeypatch, 0.0, 0.2)
    claim = _claim(teachers=2, max_teachers=6)
    evidence = claims_module.claim_evidence(claim, 0, LEVEL)
    assert computed == [0, 1, 2] and evidence.stopped == "cap"
    (verdict,) = verdicts((claim,), (evidence,), LEVEL)
    assert verdict.verdict == "undecided"
    assert "teachers" in verdict.to_decide


def test_stored_batches_are_not_recomputed(monkeypatch) -> None:
    """Batches kept by an earlier run are read back; only the missing ones are computed."""
    computed = _fake_batches(monkeypatch, 0.0, 0.2)
    kept = {0: TeacherValues(0, (0.1, 0.2), (1e-3,) * 2, (0.1, 0.2), (1e-3,) * 2)}
    claims_module.claim_evidence(_claim(teachers=2, max_teachers=4), 0, LEVEL, stored=kept.get)
    assert computed == [1]


def _evidence(difference: float, one_sided: str) -> ClaimEvidence:
    return ClaimEvidence(
        left=0.0,
        right=0.0,
        difference=difference,
        stderr=0.0,
        bound=1e-9,
        dof=math.inf,
        teachers=0,
        looks=1,
        stopped="",
        one_sided=one_sided,
        batches=(),
        seconds=0.0,
    )


@pytest.mark.parametrize(
    ("relation", "other", "difference", "expected"),
    [
        ("above", "bayes", 0.06, "undecided"),  # an upper bound above cannot show 'above'
        ("below", "bayes", -0.06, "holds"),  # ... but it shows 'below'
        ("above", "bayes", -0.06, "fails"),
        ("equal", "bayes", 1e-6, "holds"),  # sandwiched between the Bayes error and the bound
        ("equal", "value", 1e-6, "undecided"),  # no floor under it
    ],
)
def test_an_upper_bound_decides_one_direction_only(relation, other, difference, expected) -> None:
    """The left side is an upper bound ``U >= T`` on what it names: ``T - right <= U - right``."""
    right = Quantity(other, value=0.5 if other == "value" else None)
    claim = Claim(
        "c",
        ClaimTask(),
        Quantity("population", "softmax"),
        right,
        relation,
        tolerance=1e-4 if relation == "equal" else 0.0,
    )
    (verdict,) = verdicts((claim,), (_evidence(difference, "left"),), LEVEL)
    assert verdict.verdict == expected


def test_teachers_do_not_shrink_an_error_measured_once() -> None:
    """A difference whose standard error is mostly a side measured once (a replica's): more
    teachers cannot decide it when that part alone is too wide, and take more of them when it
    is part of the error."""
    wide = DifferenceEstimate(0.0, 0.012)
    assert draws_to_decide(wide, "equal", 0.02, 8, 0.05, fixed_stderr=0.011) is None
    narrow = DifferenceEstimate(-0.1, 0.1)
    assert draws_to_decide(narrow, "below", 0.0, 4, 0.05, fixed_stderr=0.02) > draws_to_decide(
        narrow, "below", 0.0, 4, 0.05
    )


def test_a_multi_head_optimum_over_all_overlaps_decides_both_directions() -> None:
    """Softmax heads at ``H = 2``, ``rho = 0.5``: the optimum of aligned heads is only an upper
    bound, so ``above`` the Bayes error could not be shown; the side is now the optimum over all
    overlaps with its Monte Carlo error (docs/multihead.md section 6), not one-sided, and the
    claim holds (its difference, about 0.06, is over 100 standard errors) while ``below`` fails;
    the side lies below the aligned optimum by more than 3 of its standard errors."""
    from bayes_slr.formulas.optimum import optimal_population_error
    from bayes_slr.studies.claims import claim_config

    task = ClaimTask(heads=2, presence=0.5)
    claims = tuple(
        Claim(
            f"softmax {relation} Bayes",
            task,
            Quantity("population", "softmax"),
            Quantity("bayes"),
            relation,
        )
        for relation in ("above", "below")
    )
    evidences = tuple(claims_module.claim_evidence(claim, 0, LEVEL / 2) for claim in claims)
    aligned = optimal_population_error("softmax", claim_config(task)).error
    for evidence in evidences:
        assert evidence.one_sided == "" and evidence.fixed_stderr > 0
        assert evidence.left + 3 * evidence.fixed_stderr < aligned
    assert [row.verdict for row in verdicts(claims, evidences, LEVEL)] == ["holds", "fails"]

"""The verdicts of a family of claims from their evidence: ``holds``, ``fails`` or
``undecided`` (with what it would take), Holm-adjusted over the family. A verdict is computed
from the evidence every time, never stored. Imports without JAX.

A side that is only an upper bound on what it names (a population optimum found on its search's
boundary, ``T <= U``) supports a conclusion in one direction only: ``left`` an upper bound makes
``left - right`` no larger than measured, so it can show ``below`` but never ``above``. When the
other side is the Bayes error of the same task, no predictor does better (docs/model.md section
2), which bounds the true value from the other side: ``equal`` can then hold.
"""

from __future__ import annotations

import dataclasses
import math

from bayes_slr.numerics.decision import (
    DifferenceEstimate,
    decision_p_value,
    draws_to_decide,
    holm_rejections,
    relation_p_values,
)
from bayes_slr.numerics.record import Record
from bayes_slr.studies.claims_records import Claim, ClaimEvidence

VERDICTS = ("holds", "fails", "undecided")


@dataclasses.dataclass(frozen=True)
class ClaimVerdict(Record):
    """One claim with its evidence and verdict.

    Attributes
    ----------
    name, task, statement : the claim, its task and what it states (``ERM softmax < ERM linear``).
    left, right : each side's value (mean over teachers where measured per teacher).
    difference, stderr, bound : ``left - right``, its standard error, its quadrature bound.
    teachers : teachers measured (0: none).
    p_value : the decision's p-value (twice the smaller of its two tests', times the looks at the
        data its batches allowed), before Holm's adjustment.
    verdict : ``holds``, ``fails`` or ``undecided``.
    to_decide : for ``undecided``, what would decide it (``""`` otherwise).
    seconds : wall time spent on it.
    claim : the claim as read.
    evidence : what was measured.
    """

    name: str
    task: str
    statement: str
    left: float
    right: float
    difference: float
    stderr: float
    bound: float
    teachers: int
    p_value: float
    verdict: str
    to_decide: str
    seconds: float
    claim: Claim
    evidence: ClaimEvidence


def estimate_of(evidence: ClaimEvidence) -> DifferenceEstimate:
    """The difference estimate of ``evidence``."""
    return DifferenceEstimate(evidence.difference, evidence.stderr, evidence.bound, evidence.dof)


def claim_p_values(
    claim: Claim, found: DifferenceEstimate, one_sided: str = ""
) -> tuple[float, float]:
    """``(p_holds, p_fails)`` of ``claim`` from the estimate ``found``, a direction that an
    upper-bound side (``one_sided``: ``"left"``, ``"right"``, ``"left and right"`` or ``""``)
    cannot support set to 1 (module docstring). The one decision rule: the batches of teachers
    stop by it and the verdicts are read from it."""
    holds, fails = relation_p_values(found, claim.relation, claim.tolerance)
    if not one_sided:
        return holds, fails
    if one_sided == "left and right":
        return 1.0, 1.0  # both true values lie anywhere below their bounds
    left_bounded = one_sided == "left"
    other = claim.right if left_bounded else claim.left
    if claim.relation != "equal":
        # a bounded left makes the true difference <= measured: it can show 'below' only
        shows_below = left_bounded
        return (holds, 1.0) if (claim.relation == "below") == shows_below else (1.0, fails)
    shift = -claim.tolerance if left_bounded else claim.tolerance
    moved = dataclasses.replace(found, value=found.value + shift)
    toward = "below" if left_bounded else "above"
    holds = relation_p_values(moved, toward)[0] if other.estimator == "bayes" else 1.0
    away = dataclasses.replace(found, value=found.value - shift)
    fails = relation_p_values(away, toward)[0]
    return holds, fails


def verdicts(
    claims: tuple[Claim, ...],
    evidences: tuple[ClaimEvidence, ...],
    level: float,
    family_size: int | None = None,
) -> tuple[ClaimVerdict, ...]:
    """Every claim's verdict at family-wise ``level`` (Holm over the family of ``family_size``
    claims, by default these: a claim of the family without evidence counts as undecided)."""
    family_size = len(claims) if family_size is None else family_size
    tests = [
        claim_p_values(c, estimate_of(e), e.one_sided)
        for c, e in zip(claims, evidences, strict=True)
    ]
    p_values = [decision_p_value(h, f, e.looks) for (h, f), e in zip(tests, evidences, strict=True)]
    missing = [1.0] * (family_size - len(claims))
    rejected = holm_rejections(p_values + missing, level)[: len(claims)]
    rows = []
    for claim, evidence, (holds, fails), p, decided in zip(
        claims, evidences, tests, p_values, rejected, strict=True
    ):
        verdict = ("holds" if holds <= fails else "fails") if decided else "undecided"
        rows.append(
            ClaimVerdict(
                name=claim.name,
                task=claim.task.describe(sized=claim.per_teacher is not None),
                statement=claim.statement(),
                left=evidence.left,
                right=evidence.right,
                difference=evidence.difference,
                stderr=evidence.stderr,
                bound=evidence.bound,
                teachers=evidence.teachers,
                p_value=p,
                verdict=verdict,
                to_decide="" if decided else to_decide(claim, evidence, level / family_size),
                seconds=evidence.seconds,
                claim=claim,
                evidence=evidence,
            )
        )
    return tuple(rows)


def to_decide(claim: Claim, evidence: ClaimEvidence, level: float) -> str:
    """What would decide an undecided claim at ``level`` (its share of the family's)."""
    if evidence.one_sided:
        bounds = "an upper bound" if " and " not in evidence.one_sided else "upper bounds"
        return f"{evidence.one_sided}: {bounds} (an optimum on its search's boundary)"
    found = estimate_of(evidence)
    if evidence.stderr <= 0:
        if evidence.bound > 0:
            return f"a quadrature tighter than its bound {evidence.bound:.2g}"
        return "nothing: the difference lies on the boundary of the relation"
    looks = max(evidence.looks, 1)
    if evidence.teachers == 0:
        needed = draws_to_decide(found, claim.relation, claim.tolerance, 1, level / looks)
        if needed is None:
            return "no number of draws: the difference sits on the boundary of the relation"
        return f"about {needed}x the Monte Carlo draws"
    needed = draws_to_decide(
        found,
        claim.relation,
        claim.tolerance,
        evidence.teachers,
        level / looks,
        evidence.fixed_stderr,
    )
    if needed is None:
        if evidence.fixed_stderr > 0:
            return (
                f"no number of teachers alone: the error of the side measured once "
                f"({evidence.fixed_stderr:.2g}) must shrink too, or the difference sits on the "
                "boundary of the relation"
            )
        return "no number of teachers: the difference sits on the boundary of the relation"
    cap = "" if needed <= claim.max_teachers else f" (raise max_teachers from {claim.max_teachers})"
    return f"about {needed} teachers{cap}"


def evidence_text(verdict: ClaimVerdict) -> str:
    """``-0.0912 +- 0.0104 (8 teachers)``: the difference as a table cell, its digits matched to
    its error."""
    error = max(verdict.stderr, verdict.bound)
    digits = 6 if error <= 0 else max(1, min(6, 1 - math.floor(math.log10(error))))
    text = f"{verdict.difference:+.{digits}f}"
    if verdict.stderr > 0:
        text += f" +- {verdict.stderr:.{digits}f}"
    elif verdict.bound > 0:
        text += f" (bound {verdict.bound:.1g})"
    if verdict.teachers:
        text += f" ({verdict.teachers} teachers)"
    return text

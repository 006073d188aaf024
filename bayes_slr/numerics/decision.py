"""Deciding a comparison from an estimate of a difference: the relation's two tests, the Holm
step-down over a family of comparisons, and how many more draws a decision would take.

A comparison states a relation between two quantities through their difference ``d = left -
right``: ``below`` (``d < 0``), ``above`` (``d > 0``) or ``equal`` within a tolerance
(``|d| <= tolerance``). Its evidence is an estimate of ``d`` with a standard error (a Student
``t`` with ``dof`` degrees of freedom, or a normal with ``dof = inf``) and, where part of it is a
deterministic value known to within a bound (a quadrature), that bound: the tests take the worst
value within it. Each comparison has two tests: one whose rejection shows the relation holds,
one whose rejection shows it fails; its p-value is twice the smaller of the two (one decision,
two possible directions). A family's p-values are adjusted by Holm's step-down, which controls
the probability of any wrong verdict in the family at ``level``. Knows nothing about SLR; imports
SciPy inside the functions.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

RELATIONS = ("below", "above", "equal")
"""The relations a comparison can state of ``left - right``."""


@dataclasses.dataclass(frozen=True)
class DifferenceEstimate:
    """An estimate of ``d = left - right``.

    Attributes
    ----------
    value : the estimate.
    stderr : its standard error (0 for a deterministic value).
    bound : a bound on the error of its deterministic part (quadrature), taken in the worst
        direction by the tests.
    dof : degrees of freedom of the ``t`` law of ``(value - d) / stderr`` (``inf``: normal).
    """

    value: float
    stderr: float = 0.0
    bound: float = 0.0
    dof: float = math.inf


def _upper_tail(z: float, dof: float) -> float:
    """``P(T >= z)`` for ``T`` of the ``t`` law with ``dof`` degrees of freedom (normal at
    ``inf``); ``z = +-inf`` give 0 and 1."""
    from scipy import stats

    if math.isinf(z):
        return 0.0 if z > 0 else 1.0
    law = stats.norm if math.isinf(dof) else stats.t(dof)
    return float(law.sf(z))


def _z(excess: float, stderr: float) -> float:
    """``excess / stderr`` with a zero standard error read as certainty (``+-inf``, or ``-inf``
    for no excess)."""
    if stderr > 0:
        return excess / stderr
    return math.inf if excess > 0 else -math.inf


def relation_p_values(
    estimate: DifferenceEstimate, relation: str, tolerance: float = 0.0
) -> tuple[float, float]:
    """``(p_holds, p_fails)``: the p-values of the test that shows ``relation`` holds (its null:
    the relation is false) and of the one that shows it fails (null: it is true).

    ``below``: holds when ``d + bound`` is significantly below 0, fails when ``d - bound`` is
    significantly above 0. ``equal``: holds by two one-sided tests (both ``d - bound >
    -tolerance`` and ``d + bound < tolerance`` significant), fails when ``|d| - bound`` is
    significantly above ``tolerance`` (either side, Bonferroni over the two).
    """
    d, se, b, dof = estimate.value, estimate.stderr, estimate.bound, estimate.dof
    if relation == "below":
        return _upper_tail(_z(-(d + b), se), dof), _upper_tail(_z(d - b, se), dof)
    if relation == "above":
        return _upper_tail(_z(d - b, se), dof), _upper_tail(_z(-(d + b), se), dof)
    if relation != "equal":
        raise ValueError(f"relation must be one of {', '.join(RELATIONS)}; got {relation!r}")
    holds = max(
        _upper_tail(_z(tolerance - (d + b), se), dof),
        _upper_tail(_z((d - b) + tolerance, se), dof),
    )
    fails = 2 * min(
        _upper_tail(_z((d - b) - tolerance, se), dof),
        _upper_tail(_z(-tolerance - (d + b), se), dof),
    )
    return holds, min(fails, 1.0)


def decision_p_value(p_holds: float, p_fails: float, looks: int = 1) -> float:
    """The p-value of a comparison's decision: twice the smaller of its two tests', times the
    number of ``looks`` at the data it was allowed (Bonferroni over the looks of a sequential
    design), at most 1."""
    return min(1.0, 2 * min(p_holds, p_fails) * looks)


def holm_rejections(p_values: Sequence[float], level: float) -> list[bool]:
    """Holm's step-down at family-wise ``level``: which of ``p_values`` are rejected (the
    ``k``-th smallest against ``level / (m - k)``, stopping at the first that is not)."""
    m = len(p_values)
    rejected = [False] * m
    for rank, index in enumerate(sorted(range(m), key=lambda i: p_values[i])):
        if p_values[index] > level / (m - rank):
            break
        rejected[index] = True
    return rejected


def critical_z(level: float, dof: float = math.inf) -> float:
    """The ``z`` at which a one-sided test of the ``t`` law with ``dof`` (normal at ``inf``) has
    p-value ``level / 2`` (a decision's two directions)."""
    from scipy import stats

    law = stats.norm if math.isinf(dof) else stats.t(dof)
    return float(law.isf(level / 2))


def draws_to_decide(
    estimate: DifferenceEstimate,
    relation: str,
    tolerance: float,
    draws: int,
    level: float,
    fixed_stderr: float = 0.0,
) -> int | None:
    """About how many draws (teachers, sequences) of the kind that gave ``estimate`` from
    ``draws`` would decide it at ``level``, if the difference is what it is now: the part of the
    standard error that comes from the draws shrinks as ``1 / sqrt(draws)``, the part
    ``fixed_stderr`` of a quantity measured once does not. ``None`` when no number of draws
    would (no spread from the draws, a difference on the boundary of the relation, or a fixed
    error too large by itself)."""
    d, se = estimate.value, estimate.stderr
    varying = se**2 - fixed_stderr**2
    if varying <= 0 or draws < 1:
        return None
    if relation == "equal":
        margin = abs(abs(d) - tolerance) - estimate.bound
    else:
        margin = abs(d) - estimate.bound
    room = (margin / critical_z(level)) ** 2 - fixed_stderr**2
    if margin <= 0 or room <= 0:
        return None
    return max(draws + 1, math.ceil(draws * varying / room))

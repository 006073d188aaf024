"""Population error of a student with ``H_s`` heads on an ``H``-head teacher (docs/multihead.md
section 6): missing heads lose their teacher heads' signal, extra heads add noise unless silenced.

Each student head is aligned with a distinct teacher head or with none
(:class:`~bayes_slr.formulas.student_heads_records.StudentHead`); the student's vectors are
orthogonal across heads, so the heads' cross terms vanish and, with ``y`` scaled by
``(rho H)^(-1/2)``,

``error = 1 - sum_j [2 m_vj A_j / sqrt(H) - q_vj B_j]``,

``(A_j, B_j)`` the terms of one head present with probability ``rho`` at head ``j``'s key
overlaps (:func:`~bayes_slr.formulas.population.heads_terms` with ``H = 1``:
``A = sqrt(rho) E[s_eps | present]``, ``B = rho B_present + (1 - rho) B_absent``). An extra head
has ``m_k = m_v = 0``: it sees null tokens only and adds ``q_v B_null``. Each bracket is at most
``A_j^2 / (H B_j)``, so the optimum over such students is ``1 - (min(H_s, H) / H) (1 - E_H)``,
``E_H`` the optimum of ``H`` aligned heads
(:func:`~bayes_slr.formulas.optimum.optimal_population_error`), with extra heads silenced
(``q_v = 0``). A head mixing several teacher heads is outside this family and may do better
(one head on two teacher heads does, by Monte Carlo:
:func:`~bayes_slr.formulas.population_mc.mixed_heads_error_mc`, docs/multihead.md section 6):
for ``H_s < H`` the optimum here bounds the optimum over all overlaps from above.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from bayes_slr.attention.activations import theory_terms_of
from bayes_slr.errors import ConfigError, check_int, check_real
from bayes_slr.formulas.bayes import ExactValue
from bayes_slr.formulas.optimum import optimal_population_error
from bayes_slr.formulas.optimum_record import PopulationOptimum
from bayes_slr.formulas.population import (
    Terms,
    check_config,
    check_key_overlaps,
    check_value_overlaps,
    terms_with_bounds,
)
from bayes_slr.formulas.student_heads_records import StudentHead, StudentHeadsOptimum
from bayes_slr.models.spec import SLRConfig


def check_student_heads(config: SLRConfig, heads: Sequence[StudentHead]) -> tuple[StudentHead, ...]:
    """Return ``heads`` as a tuple of checked :class:`StudentHead` records; ``ConfigError`` for a
    teacher index outside ``0..H-1``, two heads aligned with the same teacher head, an extra head
    (``teacher=None``) with ``m_k`` or ``m_v`` not 0, or overlaps breaking Cauchy-Schwarz."""
    heads = tuple(heads)
    if not heads:
        raise ConfigError("the student needs at least one head")
    checked = []
    for head in heads:
        if not isinstance(head, StudentHead):
            raise ConfigError(
                f"student heads must be StudentHead records, got {type(head).__name__}"
            )
        m_k, _ = check_key_overlaps(head.m_k, head.q_k)
        m_v, q_v = check_value_overlaps(head.m_v, head.q_v)
        if head.teacher is None:
            if m_k != 0.0 or m_v != 0.0:
                raise ConfigError(
                    "an extra student head (teacher=None) overlaps no teacher head: its m_k and "
                    f"m_v must be 0, got {m_k!r} and {m_v!r}"
                )
        elif check_int("teacher", head.teacher, 0) >= config.heads:
            raise ConfigError(
                f"teacher must be a teacher head's index in 0..{config.heads - 1}, "
                f"got {head.teacher!r}"
            )
        checked.append(
            StudentHead(head.teacher, m_k, float(head.q_k), m_v, q_v, check_real("c", head.c))
        )
    aligned = [head.teacher for head in checked if head.teacher is not None]
    if len(set(aligned)) != len(aligned):
        raise ConfigError(
            f"two student heads are aligned with the same teacher head (teachers {aligned}); "
            "each teacher head takes one student head at most"
        )
    return tuple(checked)


def student_heads_error(
    activation: str, config: SLRConfig, heads: Sequence[StudentHead]
) -> ExactValue:
    """Excess population test error of the student ``heads`` on the teacher of ``config``, by
    quadrature (module docstring).

    Parameters
    ----------
    activation : an activation with population-theory terms (registered, or ``softmax1``,
        ``bayes_softmax``).
    config : the task (``heads`` is the teacher's ``H``, ``presence`` its ``rho``); ``D`` and
        ``Delta`` are ignored.
    heads : the student heads, each aligned with a distinct teacher head or extra.

    Returns
    -------
    ExactValue
        The error and the bound its terms' quadrature bounds give. Heads with the same key
        overlaps and offset share one quadrature of their terms (aligned heads at one optimum
        cost one head's).
    """
    activation = theory_terms_of(activation).name
    config = check_config(config)
    heads = check_student_heads(config, heads)
    one_head = config.replace(heads=1)
    scale = 1.0 / math.sqrt(config.heads)
    terms_of: dict[tuple[float, float, float], Terms] = {}  # heads with the same key share terms
    error, bound = 1.0, 0.0
    for head in heads:
        key = (*check_key_overlaps(head.m_k, head.q_k), head.c)
        if key not in terms_of:
            terms_of[key] = terms_with_bounds(activation, one_head, *key)
        terms = terms_of[key]
        error += head.q_v * terms.B - 2.0 * head.m_v * scale * terms.A
        bound += head.q_v * terms.B_bound + 2.0 * abs(head.m_v) * scale * terms.A_bound
    return ExactValue(float(error), float(bound))


def student_heads_optimum(
    activation: str, config: SLRConfig, student_heads: int
) -> StudentHeadsOptimum:
    """Best population error of ``student_heads`` heads, each aligned with a distinct teacher
    head or extra, on the ``H``-head teacher of ``config`` (heads mixing teacher heads are not
    searched: module docstring).

    Parameters
    ----------
    activation, config : as in :func:`student_heads_error`.
    student_heads : ``H_s >= 1``.

    Returns
    -------
    StudentHeadsOptimum
        ``1 - (min(H_s, H) / H) (1 - E_H)`` (module docstring) and the heads that reach it
        (:func:`heads_at_optimum`).
    """
    config = check_config(config)
    return heads_at_optimum(optimal_population_error(activation, config), config, student_heads)


def heads_at_optimum(
    aligned: PopulationOptimum, config: SLRConfig, student_heads: int
) -> StudentHeadsOptimum:
    """The optimum of ``student_heads`` heads from the optimum ``aligned`` of one student head
    per teacher head of ``config`` (:func:`~bayes_slr.formulas.optimum.optimal_population_error`).

    The first ``min(H_s, H)`` teacher heads each take a student head at the aligned optimum's
    overlaps (the best overlaps of a head do not depend on how many others there are), and the
    ``H_s - H`` extra heads keep that optimum's key with ``q_v = 0``.
    """
    student_heads = check_int("student_heads", student_heads, 1)
    o = aligned.overlaps
    matched = min(student_heads, config.heads)
    heads = tuple(StudentHead(h, o.m_k, o.q_k, o.m_v, o.q_v, o.c) for h in range(matched)) + (
        StudentHead(None, 0.0, o.q_k, 0.0, 0.0, o.c),
    ) * (student_heads - matched)
    error = 1.0 - matched / config.heads * (1.0 - aligned.error)
    return StudentHeadsOptimum(float(error), aligned.error, heads, o.note)

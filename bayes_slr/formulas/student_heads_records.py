"""The records of a student with its own number of heads on a multi-head teacher
(:mod:`bayes_slr.formulas.student_heads`), importable without JAX or SciPy."""

from __future__ import annotations

import dataclasses

from bayes_slr.numerics.record import Record


@dataclasses.dataclass(frozen=True)
class StudentHead(Record):
    """The overlaps of one student head with the teacher heads (docs/multihead.md section 6).

    A head is aligned with one teacher head (its key and value overlap that head's ``k_h*`` and
    ``v_h*`` only), or with none (``teacher is None``: an extra head, whose key and value are
    orthogonal to every teacher direction, so ``m_k = m_v = 0``). The student's vectors are
    orthogonal across heads.

    Attributes
    ----------
    teacher : index of the teacher head it is aligned with, or ``None`` for an extra head.
    m_k, q_k : key overlaps ``k.k_h*/D`` and ``k.k/D``.
    m_v, q_v : value overlaps ``v.v_h*/D`` and ``v.v/D``.
    c : trained offset of the activations that have one.
    """

    teacher: int | None
    m_k: float
    q_k: float
    m_v: float
    q_v: float
    c: float = 0.0


@dataclasses.dataclass(frozen=True)
class StudentHeadsOptimum(Record):
    """The best population error of ``H_s`` student heads, each aligned with a distinct teacher
    head or extra, on an ``H``-head teacher, and the heads that reach it.

    Attributes
    ----------
    error : ``1 - (min(H_s, H) / H) (1 - E_H)``, ``E_H`` the optimum of ``H`` aligned heads.
    aligned_error : ``E_H``, the optimum of one student head per teacher head.
    heads : the student heads at the optimum: ``min(H_s, H)`` aligned with distinct teacher
        heads at the aligned optimum's overlaps, and ``H_s - H`` extra heads silenced
        (``q_v = 0``).
    note : the aligned optimum's note (a limit, a search boundary), else empty.
    """

    error: float
    aligned_error: float
    heads: tuple[StudentHead, ...]
    note: str

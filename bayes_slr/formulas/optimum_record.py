"""The record of an activation's population optimum (:func:`~bayes_slr.formulas.optimum.
optimal_population_error`), importable without JAX or SciPy (the experiments' rows hold it)."""

from __future__ import annotations

import dataclasses

from bayes_slr.numerics.record import Record


@dataclasses.dataclass(frozen=True)
class OptimalOverlaps(Record):
    """Where an activation's population optimum is reached (docs/model.md section 4), and the
    note saying when it is a limit or an upper bound.

    Attributes
    ----------
    m_k, q_k : the key overlaps (``inf`` for a large-norm limit).
    c : the erf offset (0 for the other activations).
    m_v, q_v : the value overlaps ``A / B`` and its square.
    note : empty unless the optimum is a limit, on the search boundary, or off the aligned manifold
        where that was only probed.
    """

    m_k: float
    q_k: float
    c: float
    m_v: float
    q_v: float
    note: str


@dataclasses.dataclass(frozen=True)
class PopulationOptimum(Record):
    """The best population error of an activation and the overlaps that reach it."""

    error: float
    overlaps: OptimalOverlaps


SEARCH_SEQUENCES = 50_000
"""Default sequences of the sample the search over all overlaps minimises on
(:func:`~bayes_slr.formulas.all_overlaps.all_overlaps_optimum`): the point found is off
the optimum by ``O(n^-1/2)``, which costs ``O(1/n)`` in error, below the check's standard
error."""
CHECK_SEQUENCES = 500_000
"""Default fresh sequences of the search's paired check against the aligned optimum."""


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


@dataclasses.dataclass(frozen=True)
class AllOverlapsOptimum(Record):
    """The population optimum of ``H_s`` student heads over all their overlaps with the teacher
    heads (heads may mix teacher heads), found by search and certified
    (:func:`~bayes_slr.formulas.all_overlaps.all_overlaps_optimum`).

    Attributes
    ----------
    error, stderr : the error at the best point known, by Monte Carlo on ``sequences`` fresh
        sequences (unbiased at that point: the optimum is at most this, up to its error).
    searched : whether that point is the search's (``True``) or the aligned optimum, which the
        point searched did not beat on the fresh sequences (``False``).
    aligned_error : the optimum of heads aligned one to one (quadrature).
    aligned_mc, aligned_mc_stderr : the error at the aligned optimum on the same sequences.
    difference, difference_stderr : the point searched minus the aligned optimum, paired on the
        same sequences.
    sequences : fresh sequences of the check.
    m_k : ``H_s x H`` key overlaps ``k_j.k_h*/D`` (of the best point known, as the next ones).
    q_k : ``H_s x H_s`` Gram matrix of the keys ``k_j.k_j'/D``.
    m_v : ``H_s x H`` value overlaps ``v_j.v_h*/D``.
    q_v : ``H_s x H_s`` Gram matrix of the values (``m_v m_v^T``: no residual).
    c : the heads' offsets (empty for an activation without one).
    starts : the names of the search's starts.
    start_errors : each start's final error on the search sample.
    agreeing : how many starts ended within ``1e-4`` of the best on the search sample.
    search_sequences : sequences of the search sample.
    """

    error: float
    stderr: float
    searched: bool
    aligned_error: float
    aligned_mc: float
    aligned_mc_stderr: float
    difference: float
    difference_stderr: float
    sequences: int
    m_k: tuple[tuple[float, ...], ...]
    q_k: tuple[tuple[float, ...], ...]
    m_v: tuple[tuple[float, ...], ...]
    q_v: tuple[tuple[float, ...], ...]
    c: tuple[float, ...]
    starts: tuple[str, ...]
    start_errors: tuple[float, ...]
    agreeing: int
    search_sequences: int

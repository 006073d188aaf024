"""The records of ERM with a multi-head student on multi-head SLR
(:mod:`bayes_slr.studies.multihead_erm`), importable without JAX."""

from __future__ import annotations

import dataclasses

from bayes_slr.numerics.record import Record


@dataclasses.dataclass(frozen=True)
class HeadOverlaps(Record):
    """Student-teacher overlaps of an ``H_s``-head fit on an ``H``-head teacher, all divided by
    ``D``.

    Attributes
    ----------
    m_k, m_v : ``H_s x H`` matrices ``k_j.k_h*/D`` and ``v_j.v_h*/D`` (rows: student heads).
    q_k, q_v : per student head, ``|k_j|^2/D`` and ``|v_j|^2/D``.
    c : per student head, the trained offset (0 for the activations without one).
    cosine_k, cosine_v : the overlaps as cosines, ``k_j.k_h* / (|k_j| |k_h*|)`` (0 for a zero
        vector).
    permutation : per student head, the teacher head it was matched with, or ``None`` for an
        extra head: the assignment of distinct teacher heads that maximises the sum of
        ``|cosine_k| + |cosine_v|`` over the matched pairs.
    """

    m_k: tuple[tuple[float, ...], ...]
    m_v: tuple[tuple[float, ...], ...]
    q_k: tuple[float, ...]
    q_v: tuple[float, ...]
    c: tuple[float, ...]
    cosine_k: tuple[tuple[float, ...], ...]
    cosine_v: tuple[tuple[float, ...], ...]
    permutation: tuple[int | None, ...]


@dataclasses.dataclass(frozen=True)
class MultiHeadERMSeed(Record):
    """ERM of one seed's teacher and training set: the start with the lowest training objective.

    Attributes
    ----------
    seed : the seed of the teacher, the training set, the starts and the test set.
    N : training samples, ``round(alpha D)``.
    test_error : excess test error ``E[(y - f)^2] - Delta`` on fresh sequences of the teacher.
    test_stderr : its standard error over the test sequences.
    train_loss : the selected start's per-sample objective.
    grad_norm : the norm of its gradient; ``converged`` whether it is at most ``tol``.
    start_losses : every random start's objective (the multi-start's spread).
    overlaps : the selected fit's overlaps with the teacher and the permutation it found.
    zero_error : the zero predictor's excess error on the same test sequences.
    excess_over_zero, excess_over_zero_stderr : ``test_error - zero_error`` on those sequences,
        paired, and its standard error (``None`` in rows logged before they were recorded).
    """

    seed: int
    N: int
    test_error: float
    test_stderr: float
    train_loss: float
    grad_norm: float
    converged: bool
    start_losses: tuple[float, ...]
    overlaps: HeadOverlaps
    zero_error: float | None = None
    excess_over_zero: float | None = None
    excess_over_zero_stderr: float | None = None


@dataclasses.dataclass(frozen=True)
class MultiHeadERM(Record):
    """ERM of an ``H_s``-head student over several seeds.

    Attributes
    ----------
    activation, student_heads, alpha, lam, starts : the settings.
    test_error : mean over seeds of the per-seed test error.
    stderr : its standard error (:func:`~bayes_slr.studies.erm.seed_mean`: the spread over
        seeds, floored by the test sets' pooled standard error; one seed: its test set's).
    per_seed : one :class:`MultiHeadERMSeed` per seed.
    zero_error : mean over seeds of the zero predictor's error on the same test sequences.
    excess_over_zero, excess_over_zero_stderr : mean over seeds of the paired ``test_error -
        zero_error`` and its standard error (as ``stderr``); ``None`` in rows logged before.
    """

    activation: str
    student_heads: int
    alpha: float
    lam: float
    starts: int
    test_error: float
    stderr: float
    per_seed: tuple[MultiHeadERMSeed, ...]
    zero_error: float | None = None
    excess_over_zero: float | None = None
    excess_over_zero_stderr: float | None = None

"""The typed records of an ERM study (:func:`bayes_slr.studies.erm.erm_study`): one per seed, with
its parts. They import without JAX."""

from __future__ import annotations

import dataclasses

from bayes_slr.numerics.paired import PairedDifference
from bayes_slr.numerics.record import Record


@dataclasses.dataclass(frozen=True)
class FitOverlaps(Record):
    """Order parameters of a fit against its teacher, all divided by ``D``
    (:func:`~bayes_slr.attention.estimators.overlaps`).

    Attributes
    ----------
    m_k, q_k, m_v, q_v : ``k.k*``, ``k.k``, ``v.v*``, ``v.v``.
    k_vstar, v_kstar, k_v : the cross overlaps ``k.v*``, ``v.k*``, ``k.v`` (zero on the manifold of
        docs/model.md section 4).
    rho_k, rho_v, kstar_vstar : the teacher's ``|k*|^2``, ``|v*|^2``, ``k*.v*``.
    c : the erf offset (0 for the other activations).
    """

    m_k: float
    q_k: float
    m_v: float
    q_v: float
    k_vstar: float
    v_kstar: float
    k_v: float
    rho_k: float
    rho_v: float
    kstar_vstar: float
    c: float


@dataclasses.dataclass(frozen=True)
class HeadOverlaps(Record):
    """Student-teacher overlaps of an ``H_s``-head fit on an ``H``-head teacher, all divided by
    ``D`` (:func:`~bayes_slr.studies.erm.head_overlaps`; docs/multihead.md section 7).

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
class StartFigures(Record):
    """One start's fit scored on its seed's test sequences (the informed start's reference)."""

    test_error: float
    stderr: float
    train_loss: float
    converged: bool


@dataclasses.dataclass(frozen=True)
class RandomStarts(Record):
    """Every random start of a seed, in order: test error, training objective, convergence."""

    test_error: tuple[float, ...]
    train_loss: tuple[float, ...]
    converged: tuple[bool, ...]


@dataclasses.dataclass(frozen=True)
class OracleError(Record):
    """The teacher's own Bayes predictor with known directions on the seed's test sequences."""

    test_error: float
    stderr: float


@dataclasses.dataclass(frozen=True)
class RidgeValidation(Record):
    """How ``lam="auto"`` chose a seed's ridge: the grid, the held-out error of each value
    (``None`` where the path stopped before it or the fit diverged), the held-out count."""

    lam_grid: tuple[float, ...]
    validation_error: tuple[float | None, ...]
    n_validation: int


@dataclasses.dataclass(frozen=True)
class ERMSeed(Record):
    """One seed of an ERM study: the selected start's figures and what to judge them by.

    Attributes
    ----------
    seed : the seed's index.
    lam : its ridge (given or chosen).
    test_error, stderr : the selected start's test error and its Monte Carlo standard error.
    train_loss, grad_norm, iterations, converged : its training objective, gradient norm, L-BFGS
        iterations, and whether ``grad_norm <= tol``.
    overlaps : its order parameters (``None`` without a teacher, or with heads: see
        ``head_overlaps``).
    predicted_population_error : docs/model.md section 4 at those overlaps, rescaled for the
        teacher norms (:func:`~bayes_slr.studies.erm.predicted_population_error`; ``None`` if not
        asked for).
    selected_start : the index of the selected random start, or ``"informed"``.
    starts : every random start.
    start_spread : largest minus smallest test error over the random starts.
    agreement_tolerance : ``max(2 x stderr, AGREEMENT_FLOOR)``.
    restarts_agree : whether the spread is within the tolerance (``None`` with one random start).
    informed : the informed start (the teacher), a reference never selected unless
        ``init="informed"`` (``None`` without a teacher).
    zero_error, zero_stderr : the zero predictor on the same sequences (about ``|v*|^2/D``).
    oracle : the teacher's Bayes predictor on the same sequences (``None`` without a teacher).
    validation : the choice of ``lam="auto"`` (``None`` for a given ridge).
    minus_zero, minus_oracle : the selected start's test error minus the zero predictor's and
        minus the oracle's, paired on the same sequences: the mean of the per-sequence difference
        and its standard error over the sequences (``n = 1`` teacher; ``minus_oracle`` ``None``
        without a teacher; both ``None`` in records written before they were stored).
    head_overlaps : with several student or teacher heads, the selected fit's overlap matrices
        with the teacher heads and the permutation it found (``None`` for one head or without a
        teacher).
    """

    seed: int
    lam: float
    test_error: float
    stderr: float
    train_loss: float
    grad_norm: float
    iterations: int
    converged: bool
    overlaps: FitOverlaps | None
    predicted_population_error: float | None
    selected_start: int | str
    starts: RandomStarts
    start_spread: float
    agreement_tolerance: float
    restarts_agree: bool | None
    informed: StartFigures | None
    zero_error: float
    zero_stderr: float
    oracle: OracleError | None
    validation: RidgeValidation | None
    minus_zero: PairedDifference | None = None
    minus_oracle: PairedDifference | None = None
    head_overlaps: HeadOverlaps | None = None

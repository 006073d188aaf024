"""The typed records of the ``gap`` study (:mod:`bayes_slr.studies.gap`): the population Bayes
error, the ERM error of one activation, a Monte Carlo estimate, the selected fit. They import
without JAX."""

from __future__ import annotations

import dataclasses

import numpy as np

from bayes_slr.formulas.optimum_record import AllOverlapsOptimum, OptimalOverlaps
from bayes_slr.numerics.paired import PairedDifference, paired_difference
from bayes_slr.numerics.record import Record
from bayes_slr.studies.erm_records import HeadOverlaps
from bayes_slr.studies.posterior_records import Estimate as Estimate  # one estimate record


@dataclasses.dataclass(frozen=True)
class FittedParameters(Record):
    """The selected ERM fit ``k``, ``v``, ``c`` (kept for data without a teacher, whose
    activations are compared again on the same held-out sequences); with ``H_s`` heads ``k``
    and ``v`` hold the heads one after another and ``offsets`` the offset of each head (``c``
    then 0)."""

    k: tuple[float, ...]
    v: tuple[float, ...]
    c: float
    offsets: tuple[float, ...] | None = None

    @classmethod
    def of(cls, k: np.ndarray, v: np.ndarray, c: np.ndarray) -> FittedParameters:
        """The record of a fit's arrays (``(D,)`` and a scalar ``c``, or ``(H_s, D)`` and
        ``(H_s,)``)."""
        flat = (tuple(float(x) for x in np.ravel(part)) for part in (k, v))
        if np.ndim(c) == 0:
            return cls(*flat, float(c))
        return cls(*flat, 0.0, tuple(float(x) for x in np.ravel(c)))

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(k, v, c)`` as arrays, the head axis first with heads."""
        if self.offsets is None:
            return np.asarray(self.k), np.asarray(self.v), np.asarray(self.c)
        heads = len(self.offsets)
        return (
            np.reshape(self.k, (heads, -1)),
            np.reshape(self.v, (heads, -1)),
            np.asarray(self.offsets),
        )


@dataclasses.dataclass(frozen=True)
class TeacherErrors(Record):
    """The per-teacher figures of an ERM point, teacher ``i`` of every tuple the same (teacher
    ``i`` of root seed ``s`` is the same for every activation: ``seed_keys(s, i)``), from which
    its means and every paired difference are derived again.

    Attributes
    ----------
    test_error, stderr : each teacher's ERM test error and its Monte Carlo standard error.
    zero_error, zero_stderr : the zero predictor's on the same sequences.
    minus_zero, minus_zero_stderr : ERM minus the zero predictor, the mean of the per-sequence
        difference and its standard error over the sequences.
    oracle_error, oracle_stderr, minus_oracle, minus_oracle_stderr : the same for the oracle
        (``None`` without a teacher).
    """

    test_error: tuple[float, ...]
    stderr: tuple[float, ...]
    zero_error: tuple[float, ...]
    zero_stderr: tuple[float, ...]
    minus_zero: tuple[float, ...]
    minus_zero_stderr: tuple[float, ...]
    oracle_error: tuple[float, ...] | None = None
    oracle_stderr: tuple[float, ...] | None = None
    minus_oracle: tuple[float, ...] | None = None
    minus_oracle_stderr: tuple[float, ...] | None = None

    def minus_zero_difference(self) -> PairedDifference:
        """ERM minus the zero predictor, paired teacher by teacher and, within a teacher,
        sequence by sequence (:func:`~bayes_slr.numerics.paired.paired_difference`)."""
        return paired_difference(
            self.test_error, self.zero_error, self.stderr, self.zero_stderr, self.minus_zero_stderr
        )

    def minus_oracle_difference(self) -> PairedDifference | None:
        """ERM minus the oracle, paired as :meth:`minus_zero_difference` (``None`` without a
        teacher)."""
        if self.oracle_error is None or self.oracle_stderr is None:
            return None
        return paired_difference(
            self.test_error,
            self.oracle_error,
            self.stderr,
            self.oracle_stderr,
            self.minus_oracle_stderr,
        )


@dataclasses.dataclass(frozen=True)
class ERMError(Record):
    """The ERM test error of one activation (docs/erm.md).

    Attributes
    ----------
    test_error, stderr : mean over seeds of the selected start's test error, and its standard
        error (over seeds; with one data set, over its test sequences).
    lam : the ridge of each seed; ``lam_auto``: chosen by validation.
    restarts_agree : whether the random starts agree (``None`` with one start).
    start_spread : largest spread of the random starts' test errors over the seeds.
    converged : every reported fit reached the gradient tolerance.
    informed_test_error : the informed start's (a reference; ``None`` without a teacher).
    zero_error : the zero predictor's on the same sequences (about ``|v*|^2/D`` for a teacher).
    excess_over_zero, excess_over_zero_stderr : test error minus the zero predictor's, paired
        per seed, and its standard error.
    notes : sentences that must accompany the number (disagreeing starts, no convergence, a
        ridge at the edge of the grid); printed as warnings.
    fit : the selected fit, for data without a teacher (else ``None``).
    teachers : the per-teacher figures (``None`` in a record written before they were stored).
    heads : with heads, each seed's overlap matrices and the permutation of heads it found
        (``None`` for one head, docs/multihead.md section 7).
    """

    test_error: float
    stderr: float
    lam: tuple[float, ...]
    lam_auto: bool
    restarts_agree: bool | None
    start_spread: float
    converged: bool
    informed_test_error: float | None
    zero_error: float
    excess_over_zero: float
    excess_over_zero_stderr: float
    notes: tuple[str, ...] = ()
    fit: FittedParameters | None = None
    teachers: TeacherErrors | None = None
    heads: tuple[HeadOverlaps, ...] | None = None

    @property
    def above_zero(self) -> bool:
        """Worse than the zero predictor by more than two standard errors."""
        return above_zero(self.excess_over_zero, self.excess_over_zero_stderr)


def above_zero(excess_over_zero: float | None, stderr: float | None) -> bool:
    """Whether a paired excess over the zero predictor exceeds two standard errors (``False``
    when it was not recorded)."""
    if excess_over_zero is None or stderr is None:
        return False
    return excess_over_zero > 2.0 * stderr


def above_zero_warning(
    activation: str, test_error: float, zero_error: float, excess: float, stderr: float, reason: str
) -> str:
    """The warning of ERM worse than the zero predictor on the same test sequences (one head or
    several)."""
    return (
        f"ERM {activation}: test error {test_error:.3g} is above the zero predictor's "
        f"{zero_error:.3g} (on the same test sequences) by {excess:.3g} +- {stderr:.2g}: {reason}"
    )


@dataclasses.dataclass(frozen=True)
class BayesValue(Record):
    """The population Bayes error with known directions and its quadrature error bound."""

    error: float
    error_bound: float


ALL_OVERLAPS = "all overlaps"
"""An optimum over every overlap of the student's heads with the teacher's."""
UPPER_BOUND = "upper bound"
"""An optimum over heads aligned one to one: an upper bound on the optimum over all overlaps
(heads that mix teacher heads may do better, docs/multihead.md section 6)."""


@dataclasses.dataclass(frozen=True)
class PopulationSettings(Record):
    """How one presence is computed.

    Attributes
    ----------
    activations : the activations whose population optimum is computed (each needs theory
        terms).
    mc_sequences : sequences of each Monte Carlo check, or 0 for none.
    search_sequences : sequences of the sample on which the optimum over all overlaps is searched
        where the aligned one is an upper bound, or 0 for no search.
    check_sequences : fresh sequences of the search's paired check against the aligned optimum.
    """

    activations: tuple[str, ...]
    mc_sequences: int
    search_sequences: int = 0
    check_sequences: int = 0


@dataclasses.dataclass(frozen=True)
class MonteCarloCheck(Record):
    """A Monte Carlo estimate of an error computed by quadrature: its mean and standard error
    over ``sequences`` sequences."""

    mean: float
    stderr: float
    sequences: int


@dataclasses.dataclass(frozen=True)
class ActivationOptimum(Record):
    """The population optimum of ``H`` aligned student heads of one activation, and where it is
    an upper bound, the optimum over all overlaps.

    Attributes
    ----------
    activation : its name.
    error : the optimal excess error (quadrature).
    overlaps : the per-head overlaps (and offset) that reach it, with the optimum's note.
    scope : :data:`ALL_OVERLAPS` or :data:`UPPER_BOUND`.
    mc : the error at ``overlaps`` by Monte Carlo (``None`` without a check).
    all_overlaps : the optimum over all overlaps by search with its paired check against this
        one (``None`` where the scope is :data:`ALL_OVERLAPS` or without a search).
    """

    activation: str
    error: float
    overlaps: OptimalOverlaps
    scope: str
    mc: MonteCarloCheck | None
    all_overlaps: AllOverlapsOptimum | None = None


@dataclasses.dataclass(frozen=True)
class MultiHeadPopulationRow(Record):
    """The Bayes error and each activation's population optimum of one multi-head task.

    Attributes
    ----------
    variant, L, variable_length, nu, heads, presence : the task.
    bayes_error : the Bayes error with known directions (quadrature).
    bayes_bound : its quadrature error bound.
    bayes_mc : the Bayes error by Monte Carlo (``None`` without a check).
    optima : one :class:`ActivationOptimum` per activation, in the settings' order.
    """

    variant: str
    L: int
    variable_length: bool
    nu: float
    heads: int
    presence: float
    bayes_error: float
    bayes_bound: float
    bayes_mc: MonteCarloCheck | None
    optima: tuple[ActivationOptimum, ...]

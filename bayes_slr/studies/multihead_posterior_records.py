"""The typed summary of a multi-head posterior (``posterior --heads H --presence rho``,
docs/multihead.md section 8), the sampling settings it takes (:func:`multihead_sampling`: the
one-head parts it has no counterpart of yet refused when asked for, else skipped) and the notes
on what it skips. Plain records: importable without JAX.

Every error is the excess test error ``E[(y - f(X))^2] - Delta``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

from bayes_slr.errors import ConfigError
from bayes_slr.numerics.record import Record
from bayes_slr.studies.posterior_records import (
    Diagnostic,
    ERMComparison,
    Estimate,
    GivenSampling,
    convergence_warnings,
    summary_repr,
)

NOT_YET = {
    "check_start": "the start check (chains from the other start read by label-free overlaps)",
}
"""The one-head parts ``posterior`` skips for a multi-head task (asking for one is refused)."""


def multihead_sampling(given: GivenSampling, files: Mapping[str, Path | None]) -> GivenSampling:
    """The sampling settings ``given`` of a multi-head posterior: refuse a file (``files``: the
    posterior or data file by its setting's name, ``None`` where not given) and the parts of
    :data:`NOT_YET` when asked for; those not given set to not run, and the ERM comparison (the
    ``H``-head student of docs/multihead.md section 7) runs only when asked for."""
    for name, path in files.items():
        if path is not None:
            raise ConfigError(
                f"`{name}` does not take `heads` or `presence` yet: a multi-head posterior "
                "is sampled on simulated data only"
            )
    for name, what in NOT_YET.items():
        if getattr(given, name):
            raise ConfigError(
                f"`{name}` is not available with `heads` or `presence` yet: {what} has no "
                "multi-head counterpart"
            )
    return dataclasses.replace(given, **dict.fromkeys(NOT_YET, False), erm=bool(given.erm))


def skipped_notes() -> tuple[str, ...]:
    """The notes of a multi-head summary on what it leaves out."""
    return tuple(f"{what} has no multi-head counterpart yet: skipped" for what in NOT_YET.values())


@dataclasses.dataclass(frozen=True)
class MultiHeadPosteriorSummary(Record):
    """Everything reported about one posterior of multi-head SLR.

    Attributes
    ----------
    alpha, N : training sequences per dimension, and their number.
    heads, presence : the task's ``H`` and ``rho``.
    sampler : the kernel that ran (``auto`` resolved).
    bayes_error : the Bayes-optimal posterior predictor (draws weighted per test sequence by
        ``p(X | k)``, the heads' joint states summed out), unbiased (disjoint draw groups);
        its standard error is over the test sequences.
    excess_over_known : its excess over the teacher's known-directions predictor on the same
        test sequences (paired).
    oracle_error : the teacher's known-directions predictor ``E[y | X, k*, v*]`` on the same
        sequences.
    population_bayes_error : the Bayes error with known directions (docs/multihead.md section 2;
        ``alpha -> inf``, any ``D`` for an exact teacher), with its quadrature bound.
    n_test : the fresh test sequences of the teacher.
    rhat_max, ess_bulk_min, ess_tail_min : worst diagnostics over :attr:`diagnostics`.
    divergences : divergent transitions (NUTS); ``None`` for Gibbs.
    diagnostics : ArviZ's summary of the matched overlaps ``m_k, m_v, q_k, q_v`` (each draw's
        heads matched to the teacher's by the best permutation, then the mean over heads):
        quantities that do not depend on the heads' labels.
    overlaps : posterior means of the matched overlaps.
    notes : lines to read with the numbers.
    warnings : reasons not to read the numbers as they stand.
    erm : ERM of an ``H``-head student on the posterior's training set per activation (as
        ``gap`` trains it, on ERM's own test sequences; ``None`` without ``erm``).
    erm_minus_bayes : per activation, ERM's error minus the posterior's on the posterior's test
        sequences (paired; ``None`` without ``erm``).
    """

    alpha: float
    N: int
    heads: int
    presence: float
    sampler: str
    bayes_error: Estimate
    excess_over_known: Estimate
    oracle_error: Estimate
    population_bayes_error: Estimate
    n_test: int
    rhat_max: float
    ess_bulk_min: float
    ess_tail_min: float
    divergences: int | None
    diagnostics: dict[str, Diagnostic]
    overlaps: dict[str, float]
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    erm: dict[str, ERMComparison] | None = None
    erm_minus_bayes: dict[str, Estimate] | None = None

    def __repr__(self) -> str:
        return summary_repr(self)

    @property
    def converged(self) -> bool:
        """Whether the chains pass every convergence check (``r_hat``, bulk ESS, divergences)."""
        return not convergence_warnings(self.rhat_max, self.ess_bulk_min, self.divergences, None)

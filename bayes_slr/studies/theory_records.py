"""The settings and typed records of the theory study (:mod:`bayes_slr.studies.theory`): one
row of a curve, its diagnostics as a tagged union read by their ``kind``. They import without
JAX."""

from __future__ import annotations

import dataclasses
import math

from bayes_slr.formulas.result import BayesTheoryDiagnostics, ERMTheoryDiagnostics
from bayes_slr.numerics.record import Record, register_tagged_union

BAYES_ESTIMATORS = ("bayes", "amp")
"""The two rows of ``--bayes`` per ``alpha``: the Bayes-optimal fixed point and AMP's."""


@dataclasses.dataclass(frozen=True)
class TheorySettings(Record):
    """How the rows of a curve are solved.

    Attributes
    ----------
    lam : the ridge of ERM, ``>= 0``.
    channel_draws : the channel draws of the equations (ERM; Bayes where the variant has no
        quadrature).
    simulate : the size ``sqrt(N D)`` of the L-BFGS simulations (``None``: none).
    seeds : teachers per simulated point.
    """

    lam: float
    channel_draws: int
    simulate: int | None
    seeds: int

    def dimension(self, alpha: float) -> int:
        """``D`` of the simulation at ``alpha`` (at least 2)."""
        return max(2, round(self.simulate / math.sqrt(alpha)))


@dataclasses.dataclass(frozen=True)
class SimulationDiagnostics(Record):
    """An L-BFGS simulation point: the spread over teachers and the size."""

    stderr: float
    D: int
    N: int
    seeds: int
    per_seed_test_error: tuple[float, ...]
    iterations: int
    lam: float


@dataclasses.dataclass(frozen=True)
class PopulationDiagnostics(Record):
    """A population (``alpha -> inf``) value: the quadrature error bound of the Bayes error
    (``None`` for an activation's optimum, found by a numerical search) and the optimum's note
    (a limit, the search boundary), empty when there is nothing to say."""

    error_bound: float | None
    note: str


@dataclasses.dataclass(frozen=True)
class BayesBranchDiagnostics(Record):
    """A fixed point of the Bayes-optimal state evolution (docs/theory.md part D) with its free
    entropy, from :func:`~bayes_slr.formulas.phase.bayes_branches`.

    Attributes
    ----------
    residual, evaluations, spectral_radius : of the fixed point (stable below 1).
    branch : ``informed`` (the greatest fixed point) or ``uninformative`` (the least: AMP's).
    free_entropy, free_entropy_stderr : the replica potential ``Phi`` at the point (``+inf`` on
        the exact-recovery branch at ``Delta = 0``) and its Monte Carlo standard error.
    mutual_information, mutual_information_stderr : ``I / D`` of the Bayes-optimal branch (the
        ``bayes`` row; ``inf`` at ``Delta = 0``; ``nan`` on the ``amp`` row).
    test_error_stderr : Monte Carlo standard error of the error (0 by quadrature).
    distinct : the two starts end at different fixed points.
    hard_phase : distinct, and the informed one is Bayes-optimal (AMP is not).
    certain : False when the free entropies differ by less than two standard errors.
    method : the channel's (``quadrature`` or ``monte carlo``); mc_samples its draws (0 for a
        quadrature).
    """

    residual: float
    evaluations: int
    spectral_radius: float
    branch: str
    free_entropy: float
    free_entropy_stderr: float
    mutual_information: float
    mutual_information_stderr: float
    test_error_stderr: float
    distinct: bool
    hard_phase: bool
    certain: bool
    method: str
    mc_samples: int


Diagnostics = (
    ERMTheoryDiagnostics
    | BayesTheoryDiagnostics
    | BayesBranchDiagnostics
    | SimulationDiagnostics
    | PopulationDiagnostics
)
DIAGNOSTICS_KINDS: dict[str, type[Record]] = {
    "erm": ERMTheoryDiagnostics,
    "bayes": BayesTheoryDiagnostics,
    "bayes_branch": BayesBranchDiagnostics,
    "simulation": SimulationDiagnostics,
    "population": PopulationDiagnostics,
}
"""A row's diagnostics by the ``kind`` its JSON carries (a tagged union: read by the tag)."""
register_tagged_union(Diagnostics, DIAGNOSTICS_KINDS)


@dataclasses.dataclass(frozen=True)
class TheoryRow(Record):
    """One point of a curve.

    Attributes
    ----------
    source : ``theory``, ``simulation`` or ``population``.
    alpha : sample ratio (``inf`` for a population value).
    estimator : an activation (ERM), ``bayes`` (the Bayes-optimal fixed point: the global
        maximiser of the free entropy) or ``amp`` (the fixed point from the uninformative start).
    init : start of the iteration (``random`` or ``informed``; for ``bayes``, the start whose
        fixed point is Bayes-optimal).
    test_error : excess test error at the fixed point (mean over teachers for a simulation).
    overlaps : the order parameters (means over teachers for a simulation).
    converged : whether the fixed point (every simulated fit) was reached: never read the error
        otherwise.
    diagnostics : the source's checks.
    """

    source: str
    alpha: float
    estimator: str
    init: str
    test_error: float
    overlaps: dict[str, float]
    converged: bool
    diagnostics: Diagnostics

    @property
    def stderr(self) -> float | None:
        """The standard error of ``test_error`` where it has one."""
        if isinstance(self.diagnostics, SimulationDiagnostics):
            return self.diagnostics.stderr
        if isinstance(self.diagnostics, BayesTheoryDiagnostics | BayesBranchDiagnostics):
            return self.diagnostics.test_error_stderr
        return None

    @property
    def rs_stable(self) -> bool | None:
        """Whether the replica-symmetric ERM solution is stable (``None`` where not defined)."""
        return getattr(self.diagnostics, "rs_stable", None)

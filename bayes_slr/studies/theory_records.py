"""The settings and typed records of the theory study (:mod:`bayes_slr.studies.theory`): one
row of a curve, its diagnostics as a tagged union read by their ``kind``, and what a curve's rows
say beside their numbers (:func:`curve_warnings`, :func:`bayes_notes`). They import without
JAX."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from bayes_slr.formulas.result import BayesTheoryDiagnostics, ERMTheoryDiagnostics
from bayes_slr.numerics.record import Record, register_tagged_union

BAYES_ESTIMATORS = ("bayes", "amp")
"""The two rows of ``--bayes`` per ``alpha``: the Bayes-optimal fixed point and AMP's."""


@dataclasses.dataclass(frozen=True)
class TheorySettings(Record):
    """How the rows of a curve are solved, and which row (its point: ``source``, ``alpha``,
    ``estimator``, ``init``).

    Attributes
    ----------
    lam : the ridge of ERM, ``>= 0``.
    channel_draws : the channel draws of the equations (ERM: all replicates together; Bayes
        where the variant has no quadrature).
    simulate : the size ``sqrt(N D)`` of the L-BFGS simulations (``None``: none).
    seeds : teachers per simulated point.
    replicates : independent channel scramblings per ERM point (the spread of their fixed points
        is its standard error).
    target_stderr : the standard error an ERM point adds channel points to reach (``None``:
        ``channel_draws`` points whatever its error).
    source : ``theory`` (the equations), ``simulation`` (L-BFGS at finite ``D``) or
        ``population`` (the ``alpha -> inf`` value).
    alpha : samples per dimension of the row (``inf`` for a population row; ``None``: the
        settings of every row of a curve, before a point is chosen).
    estimator : an activation, ``bayes`` or ``amp`` (``None`` as ``alpha``).
    init : the start of the fixed-point iteration, ``random`` or ``informed``.
    """

    lam: float
    channel_draws: int
    simulate: int | None
    seeds: int
    replicates: int
    target_stderr: float | None = None
    source: str = "theory"
    alpha: float | None = None
    estimator: str | None = None
    init: str = "random"

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
    stderr : its standard error: over independent channel scramblings (ERM), propagated from the
        channel's draws (a Monte Carlo Bayes channel), over teachers (a simulation); 0 where no
        random draw enters (a quadrature); ``None`` where it is not known (an activation's
        population optimum, a numerical search; an ERM row logged before the field).
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
    stderr: float | None = dataclasses.field(default=None, kw_only=True)
    overlaps: dict[str, float]
    converged: bool
    diagnostics: Diagnostics

    def __post_init__(self) -> None:
        """A row logged before ``stderr`` was a field reads it from its diagnostics, where they
        held it (a simulation's, a Bayes fixed point's); an ERM row of then has none."""
        if self.stderr is None and isinstance(
            self.diagnostics,
            SimulationDiagnostics | BayesTheoryDiagnostics | BayesBranchDiagnostics,
        ):
            held = getattr(self.diagnostics, "stderr", None)
            held = getattr(self.diagnostics, "test_error_stderr", held)
            object.__setattr__(self, "stderr", held)

    @property
    def rs_stable(self) -> bool | None:
        """Whether the replica-symmetric ERM solution is stable (``None`` where not defined)."""
        return getattr(self.diagnostics, "rs_stable", None)


def curve_warnings(rows: Sequence[TheoryRow]) -> list[str]:
    """One line per point whose number should not be read as it is, and per hard phase.

    Not converged; an ERM point's standard error above its target at the most points it could
    take; replica-symmetric but RS-unstable (replicon >= 1: trust simulations there);
    a hard phase (the ``bayes`` row's fixed point is not AMP's, the ``amp`` row); Bayes-optimal
    branch not resolved by the Monte Carlo channel.
    """
    warnings = []
    for row in rows:
        where = f"{row.estimator} ({row.source}, init {row.init}) at alpha={row.alpha:g}"
        if not row.converged:
            diverged = not all(math.isfinite(x) for x in row.overlaps.values())
            why = " (the iteration diverged to non-finite order parameters)" if diverged else ""
            warnings.append(f"{where}: not converged{why}; do not read its error")
        diagnostics = row.diagnostics
        erm = isinstance(diagnostics, ERMTheoryDiagnostics) and row.stderr is not None
        if erm and row.stderr > diagnostics.target_stderr:
            warnings.append(
                f"{where}: standard error {row.stderr:.2g} above its target "
                f"{diagnostics.target_stderr:g} at {diagnostics.mc_samples} channel points (more "
                "with --channel-draws)"
            )
        if row.rs_stable is False:
            warnings.append(
                f"{where}: RS-unstable (replicon {row.diagnostics.replicon:.3g} >= 1); "
                "the replica-symmetric error is not trustworthy, compare with --simulate"
            )
    bayes = {row.alpha: row for row in rows if row.estimator == "bayes" and row.source == "theory"}
    amp = {row.alpha: row for row in rows if row.estimator == "amp" and row.source == "theory"}
    for alpha in sorted(set(bayes) & set(amp)):
        optimal, random = bayes[alpha], amp[alpha]
        diagnostics = optimal.diagnostics
        if not isinstance(diagnostics, BayesBranchDiagnostics):
            continue
        if diagnostics.hard_phase:
            warnings.append(
                f"hard phase at alpha={alpha:g}: AMP (random start, amp row) error "
                f"{random.test_error:.4g}, Bayes-optimal error {optimal.test_error:.4g} (bayes "
                f"row: the informed branch, higher free entropy Phi "
                f"{diagnostics.free_entropy:.6g} > {random.diagnostics.free_entropy:.6g})"
            )
        if not diagnostics.certain:
            warnings.append(
                f"bayes at alpha={alpha:g}: the two branches' free entropies differ by less than "
                f"two Monte Carlo standard errors; which one is Bayes-optimal is not resolved "
                f"(more --channel-draws)"
            )
    return warnings


def bayes_notes(rows: Sequence[TheoryRow]) -> list[str]:
    """What the ``bayes`` and ``amp`` rows are, how their channel was computed, and each
    ``alpha`` where a metastable informed branch exists while AMP's is Bayes-optimal."""
    branch_rows = [r for r in rows if isinstance(r.diagnostics, BayesBranchDiagnostics)]
    if not branch_rows:
        return []
    notes = [
        "bayes rows: the global maximiser of the free entropy Phi over the state evolution's "
        "fixed points (the Bayes-optimal error); amp rows: the fixed point from the "
        "uninformative start (AMP from a random start); they differ only in a hard phase"
    ]
    methods = {(r.diagnostics.method, r.diagnostics.mc_samples) for r in branch_rows}
    for method, samples in sorted(methods):
        if method == "quadrature":
            notes.append("bayes/amp: the channel by quadrature (no Monte Carlo error)")
        else:
            notes.append(
                f"bayes/amp: the channel by Monte Carlo ({samples} draws, --channel-draws; the "
                f"variant has no quadrature): errors, Phi and I/D carry standard errors"
            )
    for row in branch_rows:
        d = row.diagnostics
        if row.estimator == "bayes" and d.distinct and not d.hard_phase:
            notes.append(
                f"alpha={row.alpha:g}: a metastable informed branch exists (lower free "
                f"entropy); AMP's fixed point is Bayes-optimal"
            )
    return notes

"""The settings and typed records of the phase study (:mod:`bayes_slr.studies.phase`): the
thresholds of one task with what a row derives from them (its regions of ``alpha``, the notes of
the thresholds it has none of, the Monte Carlo warning), and the threshold curves of ``Delta``.
They import without JAX."""

from __future__ import annotations

import dataclasses
import math

from bayes_slr.models.spec import describe_nu
from bayes_slr.numerics.record import Record
from bayes_slr.numerics.rounding import matched_digits

THRESHOLDS = ("alpha_WR", "alpha_sp", "alpha_IT", "alpha_alg", "alpha_PR")
"""The thresholds of a row, in the order of the table (``alpha_sp <= alpha_IT <= alpha_alg``)."""
MERGE_TOL = 1e-6
"""Error bound of the ``Delta`` where the threshold curves merge (``--curves``)."""
SETTINGS = ("Delta", "nu", "L")
"""The settings a phase diagram may sweep (one of them at a time)."""


@dataclasses.dataclass(frozen=True)
class PhaseSettings(Record):
    """How the thresholds of a task are located.

    Attributes
    ----------
    alpha_min, alpha_max : the range of ``alpha`` (a threshold below: ``-inf``, above: ``inf``).
    tol : error bound of each located threshold.
    scan : points of the scan of the fixed-point curve.
    channel_draws : channel draws where the variant has no quadrature.
    curve_points : samples of the threshold curves below their merge.
    variable_length : the task's length law as given (a label of its row).
    """

    alpha_min: float
    alpha_max: float
    tol: float
    scan: int
    channel_draws: int
    curve_points: int
    variable_length: bool = False


@dataclasses.dataclass(frozen=True)
class PhaseRow(Record):
    """The thresholds of one task.

    Attributes
    ----------
    variant, nu, L, variable_length, Delta : the task.
    alpha_WR, alpha_sp, alpha_IT, alpha_alg, alpha_PR : the thresholds (weak recovery, spinodal,
        information-theoretic, algorithmic, perfect recovery): ``nan`` = none, ``-inf`` / ``inf``
        = below ``alpha_min`` / above ``alpha_max``.
    tolerances : each threshold's error bound (0 for a closed form, ``nan`` where no value).
    statuses : each threshold's status (``located``, ``exact``, ``below range``, ``above range``,
        ``none``).
    notes : each threshold's note (how it was found, or why there is none).
    hard_phase : whether AMP is not Bayes-optimal somewhere in the range
        (``alpha_IT < alpha_alg``).
    method : the channel (``quadrature`` or ``monte carlo``).
    mc_samples : channel draws (0 for a quadrature).
    evaluations : channel evaluations spent.
    stderrs : a Monte Carlo channel's: each located threshold's standard error (the spread of the
        thresholds located on independent batches of the draws over the square root of their
        number; ``nan`` where a batch does not locate it); empty for a quadrature.
    """

    variant: str
    nu: float
    L: int
    variable_length: bool
    Delta: float
    alpha_WR: float
    alpha_sp: float
    alpha_IT: float
    alpha_alg: float
    alpha_PR: float
    tolerances: dict[str, float]
    statuses: dict[str, str]
    notes: dict[str, str]
    hard_phase: bool
    method: str
    mc_samples: int
    evaluations: int
    stderrs: dict[str, float] = dataclasses.field(default_factory=dict)

    def threshold(self, name: str) -> float:
        """The threshold called ``name`` (one of :data:`THRESHOLDS`)."""
        return getattr(self, name)

    def describe(self, name: str) -> str:
        """A threshold as the table prints it: ``1.22612 +- 1e-05``, ``1 (exact)``, ``< 0.5``,
        ``> 4`` or ``none``."""
        value, status = self.threshold(name), self.statuses[name]
        matched = matched_digits(value, self.stderrs.get(name))
        if status == "located" and matched is not None:
            return f"{matched[0]} +- {matched[1]} (s.e.)"
        if status == "located":
            return f"{value:.6g} +- {self.tolerances[name]:.1g}"
        if status == "exact":
            return f"{value:g} (exact)"
        if status in ("below range", "above range"):
            return status
        return "none"

    def setting_text(self, name: str) -> str:
        """The setting ``name`` (one of :data:`SETTINGS`) as printed: ``nu`` ``inf``, else
        ``%g``."""
        value = getattr(self, name)
        return describe_nu(value) if name == "nu" else f"{value:g}"

    def where(self) -> str:
        """The task's settings as a prefix of its notes: ``Delta=0, nu=2, L=3``."""
        return ", ".join(f"{name}={self.setting_text(name)}" for name in SETTINGS)

    def regions(self, low: float, high: float) -> list[tuple[str, float, float]]:
        """``(region, start, end)`` over ``[low, high]``: impossible below ``alpha_IT``, hard up
        to ``alpha_alg``, easy above; easy throughout without a transition (``alpha_IT``
        none)."""

        def clip(value: float) -> float:
            return min(max(value, low), high)

        if math.isnan(self.alpha_IT):
            return [("easy", low, high)]
        jump = self.alpha_IT if math.isnan(self.alpha_alg) else self.alpha_alg
        edges = [low, clip(self.alpha_IT), clip(jump), high]
        names = ("impossible", "hard", "easy")
        parts = [(name, a, b) for name, a, b in zip(names, edges, edges[1:])]
        return [part for part in parts if part[2] > part[1]]

    def missing_notes(self) -> list[str]:
        """One note per reason ``alpha_sp``, ``alpha_IT`` or ``alpha_alg`` is none, naming
        them."""
        missing: dict[str, list[str]] = {}
        for name in ("alpha_sp", "alpha_IT", "alpha_alg"):
            if self.statuses[name] == "none":
                missing.setdefault(self.notes[name], []).append(name)
        return [
            f"{self.where()}: {', '.join(names)} none: {note}" for note, names in missing.items()
        ]

    def monte_carlo_warnings(self) -> list[str]:
        """The warnings of a threshold located on a Monte Carlo channel without a standard error
        (a batch of the draws did not locate it; rows logged before the errors); none by
        quadrature."""
        located = [name for name in THRESHOLDS if self.statuses[name] == "located"]
        if self.method == "quadrature" or all(
            math.isfinite(self.stderrs.get(name, math.nan)) for name in located
        ):
            return []
        return [
            f"{self.where()}: Monte Carlo channel ({self.mc_samples} draws): the draws' own error "
            "is not in the tolerance (compare another --seed)"
        ]


def threshold_value(status: str, value: float | None) -> float:
    """A threshold record as one float: the value, ``-inf`` / ``inf`` out of range, else ``nan``."""
    if status in ("located", "exact"):
        return float(value)
    if status == "below range":
        return -math.inf
    if status == "above range":
        return math.inf
    return math.nan


def has_hard_phase(alpha_IT: float, alpha_alg: float) -> bool:
    """Whether ``alpha_IT < alpha < alpha_alg`` meets the range (both exist)."""
    if math.isnan(alpha_IT) or math.isnan(alpha_alg):
        return False
    return alpha_IT < alpha_alg and alpha_IT != math.inf and alpha_alg != -math.inf


@dataclasses.dataclass(frozen=True)
class PhaseCurves(Record):
    """The thresholds as curves of ``Delta`` up to their merge
    (:func:`~bayes_slr.formulas.threshold_curves.threshold_curves`).

    Attributes
    ----------
    Delta : the sampled noise variances, increasing, the last one the merge.
    alpha_sp, alpha_IT, alpha_alg : the thresholds there (equal at the merge).
    tolerance_sp, tolerance_IT, tolerance_alg : their error bounds.
    merge_Delta, merge_tolerance : where the curves merge, and its error bound (the S of the
        fixed-point curve exists at ``merge_Delta - merge_tolerance``, not at ``+``).
    merge_alpha, merge_alpha_tolerance : the merged threshold and its error bound.
    evaluations : channel evaluations spent.
    """

    Delta: tuple[float, ...]
    alpha_sp: tuple[float, ...]
    alpha_IT: tuple[float, ...]
    alpha_alg: tuple[float, ...]
    tolerance_sp: tuple[float, ...]
    tolerance_IT: tuple[float, ...]
    tolerance_alg: tuple[float, ...]
    merge_Delta: float
    merge_tolerance: float
    merge_alpha: float
    merge_alpha_tolerance: float
    evaluations: int

    def describe(self) -> str:
        """One line: where the curves merge."""
        return (
            f"curves: alpha_sp, alpha_IT and alpha_alg merge at Delta = {self.merge_Delta:.7g} "
            f"+- {self.merge_tolerance:.1g}, alpha = {self.merge_alpha:.6g} +- "
            f"{self.merge_alpha_tolerance:.1g} (no hard phase above it; {len(self.Delta)} "
            f"samples by continuation in Delta)"
        )

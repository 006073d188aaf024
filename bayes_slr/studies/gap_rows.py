"""The task settings of ``gap`` (:mod:`bayes_slr.experiments.gap`) as it runs (:class:`GapTask`,
the ``(variant, nu)`` settings), its rows and what a row derives from its parts: a solved point
(the part its ``kind`` computes: the records of :mod:`bayes_slr.studies.gap_records`), the row
of one task assembled from them (:func:`gap_row`: the gaps to Bayes, the notes and warnings that
go with the numbers); with heads, what a row adds beside the one-head columns (:func:`heads_part`:
the scope of each optimum, ERM's gap to the Bayes error, the heads ERM found), the checks of a
multi-head task and its settings and the activations it compares by default. It imports without
JAX."""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from bayes_slr.attention.activations import (
    OPTIONAL_ACTIVATIONS,
    activation_names,
    theory_terms_of,
)
from bayes_slr.errors import ConfigError, check_int
from bayes_slr.formulas.optimum_record import OptimalOverlaps, PopulationOptimum
from bayes_slr.models.data_task import GivenTask, data_task
from bayes_slr.models.dataset import DataSource, held_out_count
from bayes_slr.models.spec import LengthLaw, SLRConfig, describe_nu, resolved_nu
from bayes_slr.models.variants import get_variant
from bayes_slr.numerics.paired import PairedDifference, difference_name, paired_difference
from bayes_slr.numerics.record import Record
from bayes_slr.numerics.rounding import ROUNDING
from bayes_slr.studies.erm_records import HeadOverlaps
from bayes_slr.studies.gap import optimum_scope
from bayes_slr.studies.gap_records import BayesValue, ERMError, Estimate, above_zero_warning

DEFAULT_VARIANTS = ("spiked", "max")
"""The two default settings, each at its variant's own ``nu``: spiked ``nu = 2``, max
``nu = inf``."""


@dataclasses.dataclass(frozen=True)
class GapTask:
    """The task settings of ``gap`` as it runs: those given, else the data file's or the
    defaults (``variant`` and ``nu`` ``None``: both default settings).

    Attributes
    ----------
    variant, nu, L, variable_length, D, Delta : the task (``nu`` the variant's when not given).
    seeds : ERM teachers and training sets (1 with a data file).
    source, n_train : the data file and its training sequences (``None`` without one).
    heads, presence : the teacher's heads and their presence (given, or a data file's).
    """

    variant: str | None
    nu: float | None
    L: tuple[int, ...]
    variable_length: bool
    D: int
    Delta: float
    seeds: int
    source: DataSource | None = None
    n_train: int | None = None
    heads: int = 1
    presence: float = 1.0

    @classmethod
    def of_file(
        cls,
        path: Path,
        given: GivenTask,
        default_delta: float,
        holdout: float,
        source: DataSource | None = None,
    ) -> GapTask:
        """The task of the data file ``path`` (``Delta`` ``default_delta`` where neither the
        file nor ``given`` has one), reconciled with the settings ``given`` beside it
        (:func:`~bayes_slr.models.data_task.data_task`: a contradiction is refused), and its
        training sequences (all with a teacher, else those ``holdout`` does not hold out);
        ``source``: where each setting came from, as given."""
        config, read = data_task(path, given, default_delta, heads=True)
        if not (config.length.is_fixed or config.length == LengthLaw.uniform(config.Lbar)):
            raise ConfigError(
                f"`data`: gap runs fixed or uniform length laws; the config record has "
                f"{config.length.describe()}"
            )
        n_held_out = 0 if read.teacher else held_out_count(holdout, read.N)
        return cls(
            variant=config.variant,
            nu=config.nu,
            L=(config.Lbar,),
            variable_length=not config.length.is_fixed,
            D=config.D,
            Delta=config.Delta,
            seeds=1,
            source=source or read,
            n_train=read.N - n_held_out,
            heads=config.heads,
            presence=config.presence,
        )


GAP_TASK = tuple(field.name for field in dataclasses.fields(GapTask))


def variant_settings(
    variant: str | None, nu: float | None, presence: float = 1.0
) -> tuple[tuple[str, float], ...]:
    """The ``(variant, nu)`` pairs to run: both default settings without ``variant`` (those
    whose law takes ``presence``: the max law only 1)."""
    if variant is None:
        return tuple(
            (name, resolved_nu(name, None))
            for name in DEFAULT_VARIANTS
            if takes_presence(name, presence)
        )
    return ((variant, resolved_nu(variant, nu)),)


@dataclasses.dataclass(frozen=True)
class HeadsGap(Record):
    """What a ``gap`` row of a multi-head task holds beside the one-head columns.

    Attributes
    ----------
    heads, presence : the teacher's ``H`` and ``rho``.
    student_heads : the student's ``H_s`` (population optima and ERM).
    scopes : per activation, whether its population optimum (of heads aligned one to one) is
        over ``"all overlaps"`` or an ``"upper bound"`` on that optimum.
    erm_gap : per activation, ERM's test error (the row's ``erm``, with ``H_s`` heads) minus the
        population Bayes error (``None`` without ``alpha``).
    """

    heads: int
    presence: float
    student_heads: int
    scopes: dict[str, str]
    erm_gap: dict[str, float] | None = None


def matched_cosines(heads: Sequence[HeadOverlaps]) -> tuple[float, float]:
    """The smallest ``|cosine|`` of a matched (student, teacher) pair of keys and of values over
    the seeds' ``heads``: 1 when every seed specialised each matched head on its own teacher
    head."""
    keys, values = [], []
    for overlaps in heads:
        for student, teacher in enumerate(overlaps.permutation):
            if teacher is not None:
                keys.append(abs(overlaps.cosine_k[student][teacher]))
                values.append(abs(overlaps.cosine_v[student][teacher]))
    return min(keys), min(values)


def overlap_summary(heads: Sequence[HeadOverlaps]) -> str:
    """One line of the heads ERM found (each seed's ``heads``): each seed's permutation (student
    head -> teacher head, ``-`` for an extra head) and the smallest matched ``|cosine|`` of keys
    and values."""
    permutations = " ".join(
        "(" + ",".join("-" if t is None else str(t) for t in overlaps.permutation) + ")"
        for overlaps in heads
    )
    key, value = matched_cosines(heads)
    return (
        f"permutation per seed {permutations}; smallest matched |cos| keys {key:.3f}, "
        f"values {value:.3f}"
    )


def takes_presence(variant: str, presence: float) -> bool:
    """Whether the token law ``variant`` has heads of presence ``presence`` (max: 1 only)."""
    try:
        get_variant(variant).check_presence(presence)
    except ConfigError:
        return False
    return True


def check_heads_options(heads: int, D: int, init: str, alpha: float | None) -> None:
    """Refuse what ``gap`` runs for one head only, the informed start; and, with simulated ERM
    (``alpha``), a token dimension below ``2 heads`` (ERM draws exact, orthogonal teacher
    directions)."""
    if init != "random":
        raise ConfigError(
            f"init: {init!r} is one-head only; with several heads or presence < 1 ERM reports "
            "the lowest-objective random start"
        )
    if alpha is not None:
        check_int("D", D, 2 * heads)


def tilted_location(variant: str, nu: float) -> bool:
    """Whether the law's location is tilted by the tokens (max), not uniform (spiked)."""
    return get_variant(variant).population_scores(nu).location_tilt != 0.0


def heads_activations(settings: Sequence[tuple[str, float]]) -> tuple[str, ...]:
    """The activations a multi-head ``gap`` compares when none are given: every registered one,
    and the optional ones with a constant in the denominator (softmax-1, Bayes-softmax) when no
    setting has a tilted location law (where they have no population terms)."""
    optional = (
        () if any(tilted_location(v, nu) for v, nu in settings) else tuple(OPTIONAL_ACTIVATIONS)
    )
    return (*activation_names(), *optional)


def check_heads_activations(config: SLRConfig, activations: Sequence[str]) -> None:
    """Refuse an activation with a constant in its denominator on a tilted location law."""
    if not tilted_location(config.variant, config.nu):
        return
    for activation in activations:
        if theory_terms_of(activation).log_sink is not None:
            raise ConfigError(
                f"activations: {activation} has population terms only where the location is "
                f"uniform (spiked), not on the {config.variant} variant's location law; leave it "
                "out of activations"
            )


def heads_part(
    config: SLRConfig,
    student_heads: int,
    bayes: float | None,
    population: Mapping[str, float],
    erm: Mapping[str, ERMError] | None,
) -> HeadsGap:
    """What a row of the multi-head task ``config`` adds: the scope of each optimum (an upper
    bound unless over all overlaps; none without the Bayes error) and ERM's gap to Bayes."""
    scopes = (
        {}
        if bayes is None
        else {a: optimum_scope(config, e, bayes, student_heads) for a, e in population.items()}
    )
    erm_gap = (
        None
        if erm is None or bayes is None
        else {a: part.test_error - bayes for a, part in erm.items()}
    )
    return HeadsGap(config.heads, config.presence, student_heads, scopes, erm_gap)


@dataclasses.dataclass(frozen=True)
class GapSolved(Record):
    """A solved point: the part its ``kind`` computes (the oracle comes with an ERM error: same
    teachers and test sequences)."""

    bayes: BayesValue | None = None
    population: PopulationOptimum | None = None
    erm: ERMError | None = None
    oracle: Estimate | None = None


@dataclasses.dataclass(frozen=True)
class GapRow(Record):
    """One task (variant, ``nu``, ``L``): population values, and ERM at finite data.

    Attributes
    ----------
    variant, nu, L, variable_length : the task.
    bayes, bayes_error_bound : the population Bayes error with known directions (excess over
        ``Delta``; a teacher with ``|k*|^2 = |v*|^2 = D``) and its quadrature error bound.
    population : each activation's population-optimal error (``D, alpha -> inf``).
    gap : ``population - bayes`` per activation.
    optimal_overlaps : where each optimum is reached, and its note.
    erm : each activation's ERM test error (``None`` without ``alpha`` or ``data``; with
        ``H_s`` heads on a multi-head task).
    oracle : the known-direction Bayes error of the teachers on the ERM test sequences (mean
        over seeds and its standard error; ``None`` without ERM or without a teacher).
    erm_paired_differences : the ERM errors compared where they share teachers and test
        sequences (:func:`erm_differences`): ``"a - b"`` for every two activations, then
        ``"a - oracle"`` and ``"a - zero"`` for each, the mean over teachers of the per-teacher
        difference with its standard error and teacher count; for data without a teacher the
        pairs of activations are those on the held-out sequences.
    notes, warnings : lines to read with the row (limits and bounds of the optima, the ridge
        chosen; numbers not to read as they stand).
    heads : a multi-head task's heads, presence, the scope of each optimum and ERM's gap to Bayes
        (``None`` for one-head SLR); ``bayes``, ``population`` and ``gap`` are then those of
        docs/multihead.md.

    A part whose point failed is missing (``bayes`` ``None``, an activation absent).
    """

    variant: str
    nu: float
    L: int
    variable_length: bool
    bayes: float | None
    bayes_error_bound: float | None
    population: dict[str, float]
    gap: dict[str, float]
    optimal_overlaps: dict[str, OptimalOverlaps]
    erm: dict[str, ERMError] | None = None
    oracle: Estimate | None = None
    erm_paired_differences: dict[str, PairedDifference] | None = None
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    heads: HeadsGap | None = None

    def erm_of(self, activation: str) -> ERMError | None:
        """The ERM of ``activation`` (``None`` without ERM or for a failed point)."""
        return (self.erm or {}).get(activation)

    def describe(self) -> str:
        """The task as a prefix of its notes: ``spiked nu=2 L=3`` (``L=U1..5`` for variable
        lengths; ``H=2 rho=0.5`` appended for several heads)."""
        length = f"U1..{self.L}" if self.variable_length else str(self.L)
        heads = "" if self.heads is None else f" H={self.heads.heads} rho={self.heads.presence:g}"
        return f"{self.variant} nu={describe_nu(self.nu)} L={length}{heads}"


def erm_differences(
    erm: Mapping[str, ERMError], activations: Sequence[str]
) -> dict[str, PairedDifference] | None:
    """The paired differences of the ERM errors of one task (``None`` for records written before
    the per-teacher figures were stored).

    Teacher ``i`` and its training set are the same for every activation (``seed_keys(seed,
    i)``), and so are the random numbers of its test sequences: each activation's are drawn from
    the same key in the span of the teacher and its own fits, the teacher's coordinates first
    (:func:`~bayes_slr.attention.span.span_reduction`; with heads the same sequences in ``D``
    dimensions), so the zero predictor and the oracle
    score the same on them for every activation, and each activation's excess over them is
    paired sequence by sequence
    (:meth:`~bayes_slr.studies.gap_records.TeacherErrors.minus_oracle_difference`). ``"a - b"``
    is the per-teacher difference of ``a - oracle`` and ``b - oracle`` (``a - b`` itself: the
    oracle terms cancel; unbiased for the teacher's ``a - b`` on any sequences), paired over
    teachers; its per-teacher Monte Carlo error, the floor of its standard error, is taken as
    that of two independent paired differences ``sqrt(se_{a-o}^2 + se_{b-o}^2)`` (the
    sequences' shared random numbers correlate the two, typically positively, which this
    ignores). Its ``unpaired_stderr`` is the two ERM errors' combined ``sqrt(se_a^2 + se_b^2)``.
    Without a teacher (held-out data) only the differences to the zero predictor (the pairs of
    activations are :func:`~bayes_slr.studies.gap.held_out_differences`)."""
    teachers = {a: erm[a].teachers for a in activations if a in erm}
    if not teachers or any(t is None for t in teachers.values()):
        return None
    differences = {}
    with_oracle = {a: t for a, t in teachers.items() if t.minus_oracle is not None}
    for a, b in itertools.combinations(with_oracle, 2):
        ta, tb = with_oracle[a], with_oracle[b]
        paired = paired_difference(
            ta.minus_oracle, tb.minus_oracle, ta.minus_oracle_stderr, tb.minus_oracle_stderr
        )
        unpaired = math.hypot(erm[a].stderr, erm[b].stderr)
        differences[difference_name(a, b)] = dataclasses.replace(paired, unpaired_stderr=unpaired)
    for a, t in with_oracle.items():
        differences[difference_name(a, "oracle")] = t.minus_oracle_difference()
    for a, t in teachers.items():
        differences[difference_name(a, "zero")] = t.minus_zero_difference()
    return differences


def erm_warnings(activation: str, erm: ERMError, population: float | None) -> list[str]:
    """Why an ERM number is not to be read as it stands: its own notes (disagreeing starts, no
    convergence, a ridge at the grid's edge), and a test error above the zero predictor's."""
    warnings = [f"ERM {activation}: {sentence}" for sentence in erm.notes]
    if erm.above_zero:
        parameters = "2D" if erm.heads is None else f"{2 * len(erm.heads[0].permutation)}D"
        reason = (
            f"its population optimum is {population:.3g} (zero predictor: 1), and the estimation "
            f"error of {parameters} parameters from N = alpha D samples exceeds that margin"
            if population is not None
            else "no better estimator was found"
        )
        warnings.append(
            above_zero_warning(
                activation,
                erm.test_error,
                erm.zero_error,
                erm.excess_over_zero,
                erm.excess_over_zero_stderr,
                reason,
            )
        )
    return warnings


def optimum_notes(activation: str, overlaps: OptimalOverlaps) -> list[str]:
    """The note of a population optimum that is a limit (``|k| -> inf``) or an upper bound."""
    note = overlaps.note
    if not note:
        return []
    if "no finite optimum" in note:
        kind = " is a limit (|k| -> inf)"
    elif "boundary" in note:
        kind = " is an upper bound on its optimum"
    else:
        kind = ""
    return [f"population {activation}{kind}: {note}"]


def row_notes(
    population: dict[str, float],
    optimal_overlaps: dict[str, OptimalOverlaps],
    erm: dict[str, ERMError] | None,
    activations: Sequence[str],
) -> tuple[list[str], list[str]]:
    """What a reader must know with a row: ``(notes, warnings)``.

    Notes: limits and upper bounds of the population optima, the ridge chosen by validation.
    Warnings (numbers not to read as they stand): :func:`erm_warnings`.
    """
    notes, warnings = [], []
    for activation in activations:
        if activation in optimal_overlaps:
            notes += optimum_notes(activation, optimal_overlaps[activation])
    for activation, part in (erm or {}).items():
        if part.lam_auto:
            notes.append(
                f"ERM {activation}: lam chosen by held-out validation per seed: "
                + ", ".join(f"{x:.3g}" for x in part.lam)
            )
        warnings += erm_warnings(activation, part, population.get(activation))
    return notes, warnings


def gap_row(
    config: SLRConfig,
    variable_length: bool,
    parts: Mapping[tuple[str, str | None], GapSolved],
    activations: Sequence[str],
    runs_erm: bool,
    student_heads: int | None = None,
) -> GapRow:
    """The row of the task ``config`` (``L`` its ``Lbar``, of a uniform law with
    ``variable_length``) from its solved points, keyed by ``(kind, activation)``
    (a failed point leaves its part out): the gaps to Bayes, the notes and warnings; with
    ``student_heads`` (a multi-head task, docs/multihead.md) the row's ``heads`` part and ERM
    with that many heads."""
    bayes = parts.get(("bayes", None))
    optima = {
        a: parts[("population", a)].population for a in activations if ("population", a) in parts
    }
    erm = {a: parts[("erm", a)] for a in activations if ("erm", a) in parts} if runs_erm else None
    population = {a: optimum.error for a, optimum in optima.items()}
    bayes_error = None if bayes is None else bayes.bayes.error
    gap = (
        {}
        if bayes_error is None
        else {a: _difference(e, bayes_error) for a, e in population.items()}
    )
    erm_errors = None if erm is None else {a: part.erm for a, part in erm.items()}
    overlaps = {a: optimum.overlaps for a, optimum in optima.items()}
    notes, warnings = row_notes(population, overlaps, erm_errors, activations)
    heads = (
        None
        if student_heads is None
        else heads_part(config, student_heads, bayes_error, population, erm_errors)
    )
    differences = None if erm_errors is None else erm_differences(erm_errors, activations)
    return GapRow(
        config.variant,
        config.nu,
        config.Lbar,
        variable_length,
        bayes_error,
        None if bayes is None else bayes.bayes.error_bound,
        population,
        gap,
        overlaps,
        erm=erm_errors,
        oracle=next((part.oracle for part in (erm or {}).values()), None),
        erm_paired_differences=differences,
        notes=tuple(notes),
        warnings=tuple(warnings),
        heads=heads,
    )


def _difference(error: float, bayes_error: float) -> float:
    """``error - bayes_error``, with float64 rounding of zero (below :data:`ROUNDING`) stored as
    an exact 0, so the frame and the JSON hold the 0 the table prints."""
    difference = error - bayes_error
    return 0.0 if abs(difference) < ROUNDING else difference

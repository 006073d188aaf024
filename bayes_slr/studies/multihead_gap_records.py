"""The settings and typed records of ``gap`` on multi-head SLR
(:mod:`bayes_slr.studies.multihead_gap`): how its ERM runs, a solved point, and what a row holds
beside the one-head columns (:func:`heads_part`, with its warnings); the checks of a multi-head
task and its settings (the ridge, the activations a tilted location law has no terms for, what
runs for one head only) and the activations it compares by default. It imports without JAX."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path

from bayes_slr.attention.activations import (
    OPTIONAL_ACTIVATIONS,
    activation_names,
    theory_terms_of,
)
from bayes_slr.attention.erm_settings import LAM_AUTO
from bayes_slr.errors import ConfigError, check_int, check_real
from bayes_slr.formulas.optimum_record import PopulationOptimum
from bayes_slr.models.spec import SLRConfig
from bayes_slr.models.variants import get_variant
from bayes_slr.numerics.record import Record
from bayes_slr.studies.gap_records import BayesValue, above_zero, above_zero_warning
from bayes_slr.studies.multihead_erm_records import MultiHeadERM
from bayes_slr.studies.multihead_population import optimum_scope


@dataclasses.dataclass(frozen=True)
class HeadsERMSettings(Record):
    """How an ERM point of a multi-head task is run (:func:`~bayes_slr.studies.multihead_erm.
    multihead_erm`); checked when built.

    Attributes
    ----------
    student_heads : the student's heads ``H_s >= 1``.
    lam : ridge ``>= 0`` (a number: no validation path with several heads).
    seeds : independent exact teachers and training sets, ``>= 1``.
    starts : random starts per training set, ``>= 1`` (the lowest objective is the fit).
    N_test : fresh test sequences per seed, ``>= 2``.
    """

    student_heads: int
    lam: float
    seeds: int
    starts: int
    N_test: int

    def __post_init__(self) -> None:
        check_int("student_heads", self.student_heads, 1)
        check_real("lam", self.lam, minimum=0.0)
        check_int("seeds", self.seeds, 1)
        check_int("starts", self.starts, 1)
        check_int("N_test", self.N_test, 2)


@dataclasses.dataclass(frozen=True)
class HeadsSolved(Record):
    """A solved point of a multi-head task: the part its kind computes."""

    bayes: BayesValue | None = None
    population: PopulationOptimum | None = None
    erm: MultiHeadERM | None = None


@dataclasses.dataclass(frozen=True)
class HeadsGap(Record):
    """What a ``gap`` row of a multi-head task holds beside the one-head columns.

    Attributes
    ----------
    heads, presence : the teacher's ``H`` and ``rho``.
    student_heads : the student's ``H_s`` (population optima and ERM).
    scopes : per activation, whether its population optimum (of heads aligned one to one) is
        over ``"all overlaps"`` or an ``"upper bound"`` on that optimum.
    erm : per activation, ERM with ``H_s`` heads (``None`` without ``alpha``).
    erm_gap : per activation, ERM's test error minus the population Bayes error.
    """

    heads: int
    presence: float
    student_heads: int
    scopes: dict[str, str]
    erm: dict[str, MultiHeadERM] | None = None
    erm_gap: dict[str, float] | None = None


def matched_cosines(erm: MultiHeadERM) -> tuple[float, float]:
    """The smallest ``|cosine|`` of a matched (student, teacher) pair of keys and of values over
    the seeds: 1 when every seed specialised each matched head on its own teacher head."""
    keys, values = [], []
    for seed in erm.per_seed:
        overlaps = seed.overlaps
        for student, teacher in enumerate(overlaps.permutation):
            if teacher is not None:
                keys.append(abs(overlaps.cosine_k[student][teacher]))
                values.append(abs(overlaps.cosine_v[student][teacher]))
    return min(keys), min(values)


def overlap_summary(erm: MultiHeadERM) -> str:
    """One line of the heads ERM found: each seed's permutation (student head -> teacher head,
    ``-`` for an extra head) and the smallest matched ``|cosine|`` of keys and values."""
    permutations = " ".join(
        "(" + ",".join("-" if t is None else str(t) for t in seed.overlaps.permutation) + ")"
        for seed in erm.per_seed
    )
    key, value = matched_cosines(erm)
    return (
        f"permutation per seed {permutations}; smallest matched |cos| keys {key:.3f}, "
        f"values {value:.3f}"
    )


HEADS_LAM = 1.0
"""The ridge of multi-head ERM when not given (``lam="auto"`` validates one head only): with
the study's ``1e-3`` ERM overfits at small ``alpha`` (docs/multihead.md section 7)."""


def takes_presence(variant: str, presence: float) -> bool:
    """Whether the token law ``variant`` has heads of presence ``presence`` (max: 1 only)."""
    try:
        get_variant(variant).check_presence(presence)
    except ConfigError:
        return False
    return True


def check_heads_options(
    heads: int, D: int, data: Path | None, init: str, optimizer: str, alpha: float | None
) -> None:
    """Refuse what ``gap`` runs for one head only: a data file, the informed start, SGD; and,
    with ERM (``alpha``), a token dimension below ``2 heads`` (ERM draws exact, orthogonal
    teacher directions)."""
    if data is not None:
        raise ConfigError(
            "data: gap reads one-head data files; with several heads or presence < 1 it draws "
            "its teachers (leave out data)"
        )
    if init != "random":
        raise ConfigError(
            f"init: {init!r} is one-head only; with several heads or presence < 1 ERM reports "
            "the lowest-objective random start"
        )
    if optimizer != "lbfgs":
        raise ConfigError(
            f"optimizer: {optimizer!r} is one-head only; with several heads or presence < 1 ERM "
            "trains by lbfgs"
        )
    if alpha is not None:
        check_int("D", D, 2 * heads)


def check_heads_lam(lam: float | str) -> float:
    """The ridge of multi-head ERM: a number ``>= 0`` (``"auto"`` is refused)."""
    if lam == LAM_AUTO:
        raise ConfigError(
            f"lam: 'auto' (validation) chooses the ridge of one head only; with several heads or "
            f"presence < 1 give a number >= 0 (default {HEADS_LAM:g})"
        )
    return check_real("lam", lam, minimum=0.0)


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
    erm: Mapping[str, MultiHeadERM] | None,
) -> HeadsGap:
    """What a row of the multi-head task ``config`` adds: the scope of each optimum (an upper
    bound unless over all overlaps; none without the Bayes error), ERM and its gap to Bayes."""
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
    return HeadsGap(
        config.heads,
        config.presence,
        student_heads,
        scopes,
        None if erm is None else dict(erm),
        erm_gap,
    )


def heads_warnings(heads: HeadsGap | None) -> list[str]:
    """ERM fits that did not reach the gradient tolerance, and ERM worse than the zero predictor
    (the one-head warning, :func:`~bayes_slr.studies.gap_records.above_zero_warning`)."""
    warnings = []
    for activation, erm in ((heads.erm or {}) if heads is not None else {}).items():
        stalled = [seed for seed in erm.per_seed if not seed.converged]
        if stalled:
            warnings.append(
                f"ERM {activation}: seed(s) {', '.join(str(s.seed) for s in stalled)} stopped "
                f"with |grad| up to {max(s.grad_norm for s in stalled):.2g}, above the tolerance"
            )
        if above_zero(erm.excess_over_zero, erm.excess_over_zero_stderr):
            warnings.append(
                above_zero_warning(
                    activation,
                    erm.test_error,
                    erm.zero_error,
                    erm.excess_over_zero,
                    erm.excess_over_zero_stderr,
                    f"the estimation error of {2 * erm.student_heads}D parameters from N = alpha "
                    "D samples exceeds what they explain",
                )
            )
    return warnings

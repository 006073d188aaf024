"""What a ``gap`` row of a multi-head task holds beside the one-head columns (:func:`heads_part`:
the scope of each optimum, ERM's gap to the Bayes error, the heads ERM found); the checks of a
multi-head task and its settings (the activations a tilted location law has no terms for, what
runs for one head only) and the activations it compares by default. Its points are those of
one-head ``gap`` (:mod:`bayes_slr.studies.gap`, heads an axis). It imports without JAX."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from bayes_slr.attention.activations import (
    OPTIONAL_ACTIVATIONS,
    activation_names,
    theory_terms_of,
)
from bayes_slr.errors import ConfigError, check_int
from bayes_slr.models.spec import SLRConfig
from bayes_slr.models.variants import get_variant
from bayes_slr.numerics.record import Record
from bayes_slr.studies.erm_records import HeadOverlaps
from bayes_slr.studies.gap_records import ERMError
from bayes_slr.studies.multihead_population import optimum_scope


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

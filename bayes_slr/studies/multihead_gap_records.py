"""The settings and typed records of ``gap`` on multi-head SLR
(:mod:`bayes_slr.studies.multihead_gap`): how its ERM runs, a solved point, and what a row holds
beside the one-head columns. It imports without JAX."""

from __future__ import annotations

import dataclasses

from bayes_slr.errors import check_int, check_real
from bayes_slr.formulas.optimum_record import PopulationOptimum
from bayes_slr.numerics.record import Record
from bayes_slr.studies.gap_records import BayesValue
from bayes_slr.studies.multihead_erm_records import MultiHeadERM


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

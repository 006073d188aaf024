"""The settings and typed row of the multi-head population study
(:mod:`bayes_slr.studies.multihead_population`). It imports without JAX."""

from __future__ import annotations

import dataclasses

from bayes_slr.formulas.optimum_record import AllOverlapsOptimum, OptimalOverlaps
from bayes_slr.numerics.record import Record

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

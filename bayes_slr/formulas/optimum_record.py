"""The record of an activation's population optimum (:func:`~bayes_slr.formulas.optimum.
optimal_population_error`), importable without JAX or SciPy (the experiments' rows hold it)."""

from __future__ import annotations

import dataclasses

from bayes_slr.numerics.record import Record


@dataclasses.dataclass(frozen=True)
class OptimalOverlaps(Record):
    """Where an activation's population optimum is reached (docs/model.md section 4), and the
    note saying when it is a limit or an upper bound.

    Attributes
    ----------
    m_k, q_k : the key overlaps (``inf`` for a large-norm limit).
    c : the erf offset (0 for the other activations).
    m_v, q_v : the value overlaps ``A / B`` and its square.
    note : empty unless the optimum is a limit, on the search boundary, or off the aligned manifold
        where that was only probed.
    """

    m_k: float
    q_k: float
    c: float
    m_v: float
    q_v: float
    note: str


@dataclasses.dataclass(frozen=True)
class PopulationOptimum(Record):
    """The best population error of an activation and the overlaps that reach it."""

    error: float
    overlaps: OptimalOverlaps

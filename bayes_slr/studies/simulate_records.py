"""The settings and typed records of a drawn data set (:mod:`bayes_slr.studies.simulate`). They
import without JAX."""

from __future__ import annotations

import dataclasses

import numpy as np

from bayes_slr.numerics.record import JsonObject, Record


@dataclasses.dataclass(frozen=True)
class SimulateSettings(Record):
    """What is drawn: ``N`` sequences, and the teacher (``exact_teacher``: ``|k*|^2 = |v*|^2 =
    D``, else a prior draw)."""

    N: int
    exact_teacher: bool


@dataclasses.dataclass(frozen=True)
class DataSummary(Record):
    """What a data set looks like.

    Attributes
    ----------
    shapes : array -> shape, as ``NxLxD``.
    mean_chi_star_at_location : mean of ``chi*`` at the true location (``sqrt(nu)`` for spiked
        SLR with an exact teacher; of every present head's own score at its location, for
        several heads), with its standard error (``None`` for one value).
    mean_length, var_y : the sequences' mean length and the outputs' variance (about
        ``|v*|^2/D + Delta``).
    """

    shapes: dict[str, str]
    mean_chi_star_at_location: float
    stderr_chi_star_at_location: float | None
    mean_length: float
    var_y: float


@dataclasses.dataclass(frozen=True)
class SimulatedData(Record):
    """A drawn data set: its summary, and the arrays (not part of the JSON)."""

    summary: DataSummary
    arrays: dict[str, np.ndarray] = dataclasses.field(repr=False)

    def to_dict(self) -> JsonObject:
        """The summary (the arrays go to the ``.npz`` file)."""
        return {"summary": self.summary.to_dict()}

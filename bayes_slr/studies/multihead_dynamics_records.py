"""The records of the specialisation of student heads under online SGD
(:mod:`bayes_slr.studies.multihead_dynamics`), importable without JAX."""

from __future__ import annotations

import dataclasses

from bayes_slr.attention.multihead_trajectory import HeadsTrajectory, Matrix
from bayes_slr.numerics.record import Record


@dataclasses.dataclass(frozen=True)
class SpecialisationRun(Record):
    """One online-SGD run of ``H_s`` heads read for specialisation (times are ODE times,
    ``eta / D`` per step; ``nan`` where a level is never reached).

    Attributes
    ----------
    D, seed : the dimension and the run's seed.
    crossing_times : ``H_s x H``: the first time the cosine of student key ``j`` with teacher key
        ``h`` reaches the level.
    escape_time : the first of them: the run leaves its random start.
    permutation : per student head, the teacher head it ends matched with (the assignment of
        distinct teacher heads maximising the final ``|cos_k| + |cos_v|``), ``None`` for an extra
        head.
    head_times : per student head, the first time its key's cosine with its matched teacher head
        exceeds its largest cosine with the other teacher heads by the level (``nan`` for an extra
        head): the time it specialises.
    specialised : every matched head is specialised at the end (its final gap at least the level).
    specialisation_time : the last matched head's time (``nan`` unless specialised).
    plateau : ``specialisation_time - escape_time``: the time spent with the heads unspecialised
        after leaving the start.
    final_error, final_stderr : the test error at the end and its standard error.
    cross_overlap : the largest ``|cross overlap|`` at the end
        (:attr:`~bayes_slr.attention.multihead_trajectory.HeadsPoint.largest_cross_overlap`):
        how far the run ended from the manifold of the ODEs.
    trajectory : the logged points.
    """

    D: int
    seed: int
    crossing_times: Matrix
    escape_time: float
    permutation: tuple[int | None, ...]
    head_times: tuple[float, ...]
    specialised: bool
    specialisation_time: float
    plateau: float
    final_error: float
    final_stderr: float
    cross_overlap: float
    trajectory: HeadsTrajectory


@dataclasses.dataclass(frozen=True)
class SpecialisationSummary(Record):
    """The runs of one dimension: means over the specialised seeds with their standard errors
    (``nan`` with fewer than two).

    Attributes
    ----------
    D : the dimension.
    seeds : runs.
    specialised : runs whose heads all specialised by the end; ``seeds - specialised`` stalled.
    escape_time, escape_stderr : over every run.
    specialisation_time, specialisation_stderr : over the specialised runs.
    plateau, plateau_stderr : over the specialised runs.
    final_error, final_error_stderr : over every run.
    """

    D: int
    seeds: int
    specialised: int
    escape_time: float
    escape_stderr: float
    specialisation_time: float
    specialisation_stderr: float
    plateau: float
    plateau_stderr: float
    final_error: float
    final_error_stderr: float


@dataclasses.dataclass(frozen=True)
class SpecialisationStudy(Record):
    """Specialisation of ``H_s`` heads against ``D``.

    Attributes
    ----------
    activation, student_heads, eta, batch, t_max, level : the settings.
    summaries : one per dimension, in the order given.
    runs : every run, dimension by dimension, seed by seed.
    """

    activation: str
    student_heads: int
    eta: float
    batch: int
    t_max: float
    level: float
    summaries: tuple[SpecialisationSummary, ...]
    runs: tuple[SpecialisationRun, ...]
